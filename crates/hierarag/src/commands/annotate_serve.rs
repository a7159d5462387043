//! `hierarag annotate serve`: the rating web app for the annotators of a run directory.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hierarag_annotate::{ANNOTATIONS_FILE, Store};
use hierarag_annotate_server::{ServeOptions, bind, check_address, serve};

use crate::output::note;

/// `hierarag annotate serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The run directory with annotations.sqlite (from `hierarag annotate sample`).
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The address to listen on; anything but a loopback address needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_host)]
    pub host: IpAddr,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Let other machines connect (a non-loopback --host). Annotators' tokens are then the only
    /// access control, so at least one annotator must exist; the app speaks plain HTTP, so put
    /// it behind TLS on an untrusted network.
    #[arg(long)]
    pub allow_remote: bool,
    /// Add an annotator with this name before serving (repeatable); an existing name keeps its
    /// token.
    #[arg(long = "annotator", value_name = "NAME")]
    pub annotators: Vec<String>,
}

/// An IP address, or `localhost` for 127.0.0.1.
fn parse_host(text: &str) -> Result<IpAddr, String> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("`{text}` is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)"))
}

pub fn run(args: &ServeArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let options = ServeOptions {
        allow_remote: args.allow_remote,
    };
    check_address(SocketAddr::new(args.host, args.port), &options)?;
    let path = args.dir.join(ANNOTATIONS_FILE);
    let store = Store::open(&path)?;
    for name in &args.annotators {
        store
            .add_annotator(name)
            .with_context(|| format!("{}: adding annotator `{name}`", path.display()))?;
    }
    let annotators = store.annotators()?;
    if !args.host.to_canonical().is_loopback() && annotators.is_empty() {
        anyhow::bail!(
            "serving on {}, which is not a loopback address, needs at least one annotator, since \
             tokens are the only access control: add one with `--annotator NAME`",
            args.host
        );
    }
    let n_items = store.items()?.len();
    drop(store);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = bind(args.host, args.port, &options).await?;
        let addr: SocketAddr = listener.local_addr()?;
        // Data (the links) to stdout, the rest to stderr.
        let mut out = std::io::stdout().lock();
        for annotator in &annotators {
            writeln!(
                out,
                "{}\thttp://{addr}/a/{}",
                annotator.name, annotator.token
            )?;
        }
        out.flush()?;
        drop(out);
        if annotators.is_empty() {
            note(
                quiet,
                format!(
                    "no annotators yet: add them with `--annotator NAME` or \
                     `hierarag annotate annotators {} --add NAME` (the server picks them up)",
                    args.dir.display()
                ),
            );
        }
        if addr.ip().is_unspecified() {
            note(
                quiet,
                "listening on every address: replace the address in the links by this machine's",
            );
        }
        note(
            quiet,
            format!(
                "serving {n_items} items of {} on http://{addr}/ (one link per annotator above); \
                 Ctrl-C to stop",
                path.display()
            ),
        );
        serve(listener, &args.dir, options).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse() {
        assert_eq!(parse_host("localhost"), Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(parse_host("0.0.0.0"), Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        assert_eq!(parse_host("[::1]"), Ok("::1".parse().unwrap()));
        assert!(parse_host("example.com").is_err());
    }
}
