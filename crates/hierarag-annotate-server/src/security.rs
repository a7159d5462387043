//! The defences around every request: the Host check, security headers with a script nonce,
//! CSRF values and the same-origin check of form posts.

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::TryRngCore;
use rand::rngs::OsRng;

use crate::AppState;
use crate::handlers::AppError;

/// The nonce that lets this response's own inline script run under the CSP.
#[derive(Debug, Clone)]
pub(crate) struct Nonce(pub(crate) String);

/// Runs around every handler: refuses a non-loopback `Host` on a loopback-only server, hands the
/// handler a fresh script nonce, and sets the security headers on the response.
pub(crate) async fn guard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if !state.options().allow_remote && !host_is_loopback(request.headers()) {
        return AppError::Forbidden(
            "this server only answers requests addressed to localhost or a loopback address"
                .to_owned(),
        )
        .into_response();
    }
    let nonce = match random_hex(16) {
        Ok(nonce) => nonce,
        Err(error) => return AppError::Internal(error).into_response(),
    };
    request.extensions_mut().insert(Nonce(nonce.clone()));
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The token is in the URL: never send it to another origin. Not `no-referrer`: under it a
    // browser sends `Origin: null` with the form posts, which the origin check must refuse.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Whether the request's `Host` names a loopback address (`localhost`, `127.x.y.z`, `[::1]`),
/// or is absent (HTTP/1.0; no browser sends that).
fn host_is_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST) else {
        return true;
    };
    let Ok(host) = host.to_str() else {
        return false;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _port)| name)
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// Refuses a form post that the browser marks as coming from another site: a `Sec-Fetch-Site`
/// other than `same-origin` or `none`, or an `Origin` whose host and port are not this request's
/// `Host`.
pub(crate) fn check_same_origin(headers: &HeaderMap) -> Result<(), AppError> {
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.to_str(), Ok("same-origin" | "none"))
    {
        return Err(AppError::Forbidden(
            "this form was sent from another site".to_owned(),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let authority = origin.to_str().ok().and_then(|origin| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
        });
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok());
        match (authority, host) {
            (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => {}
            _ => {
                return Err(AppError::Forbidden(
                    "this form was sent from another origin".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

impl AppState {
    /// The CSRF value for this annotator's forms, made on first use.
    pub(crate) fn csrf_for(&self, token: &str) -> Result<String, AppError> {
        let mut values = self.csrf_values();
        if let Some(value) = values.get(token) {
            return Ok(value.clone());
        }
        let value = random_hex(32).map_err(AppError::Internal)?;
        values.insert(token.to_owned(), value.clone());
        Ok(value)
    }

    /// Whether `given` is the CSRF value handed out for this annotator.
    pub(crate) fn csrf_matches(&self, token: &str, given: &str) -> bool {
        self.csrf_values()
            .get(token)
            .is_some_and(|value| constant_time_eq(value.as_bytes(), given.as_bytes()))
    }
}

/// Compares without stopping at the first difference, so timing tells nothing of the value.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// `n_bytes` of the operating system's randomness as lowercase hex.
fn random_hex(n_bytes: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; n_bytes];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| format!("cannot draw randomness from the operating system: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in [
            "127.0.0.1:8765",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(host_is_loopback(&headers(&[("host", host)])), "{host}");
        }
        for host in [
            "evil.example:8765",
            "10.0.0.1:8765",
            "[2001:db8::1]:80",
            "localhost.evil",
        ] {
            assert!(!host_is_loopback(&headers(&[("host", host)])), "{host}");
        }
    }

    #[test]
    fn same_origin_posts_pass_and_others_are_refused() {
        let host = ("host", "127.0.0.1:8765");
        assert!(check_same_origin(&headers(&[host])).is_ok());
        assert!(check_same_origin(&headers(&[host, ("origin", "http://127.0.0.1:8765")])).is_ok());
        assert!(check_same_origin(&headers(&[host, ("sec-fetch-site", "same-origin")])).is_ok());
        for bad in [
            vec![host, ("origin", "http://evil.example")],
            vec![host, ("origin", "http://127.0.0.1:9999")],
            vec![host, ("origin", "null")],
            vec![host, ("sec-fetch-site", "cross-site")],
            vec![host, ("sec-fetch-site", "same-site")],
        ] {
            assert!(check_same_origin(&headers(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
