//! JSON-schema constrained decoding with llguidance: the schema compiled to a grammar over the
//! model's vocabulary, and at each step the set of tokens that keep the reply inside it.
//!
//! llguidance (the library llama.cpp and vLLM use) takes JSON Schema as it is: `properties` in
//! the order declared, `required`, `additionalProperties`, `items`, `minItems`/`maxItems`,
//! `enum`, `const`, `anyOf`, `$ref`, `pattern`, string formats, numeric bounds. Whitespace
//! between JSON tokens is limited to [`MAX_WHITESPACE`] bytes so that a small model cannot stall
//! in it. A mask costs 7–28 µs a token on average and at most 0.2 ms on the generator's and
//! filter's schemas (docs/benchmarks.md), against about 7 ms for the forward pass.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, SimpleVob, TokEnv, TokRxInfo, TokTrie};
use llguidance::{Matcher, ParserFactory};
use serde_json::{Value, json};

use crate::tokenizer::{TokenId, Tokenizer};

/// The longest run of whitespace allowed between JSON tokens.
pub const MAX_WHITESPACE: usize = 16;

/// Compiles JSON schemas for one vocabulary (building it walks the whole vocabulary once,
/// about 0.2 s, so the model builds it on its first constrained request).
pub(crate) struct Grammars {
    factory: ParserFactory,
}

impl std::fmt::Debug for Grammars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grammars").finish_non_exhaustive()
    }
}

impl Grammars {
    pub(crate) fn new(tokenizer: &Tokenizer) -> Result<Grammars, String> {
        // llguidance's token trie: each token's bytes; control tokens as their text behind
        // llguidance's special-token marker, so no JSON grammar can produce them.
        let words: Vec<Vec<u8>> = (0..tokenizer.vocab_size() as TokenId)
            .map(|id| {
                if tokenizer.is_control(id) {
                    let mut word = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    word.extend(tokenizer.token_text(id).unwrap_or_default().bytes());
                    word
                } else {
                    tokenizer.piece(id).to_vec()
                }
            })
            .collect();
        let end_of_generation = tokenizer.end_of_generation();
        let eos = tokenizer
            .eos()
            .or_else(|| end_of_generation.first().copied())
            .ok_or_else(|| "the vocabulary has no end-of-generation token".to_owned())?;
        let info = TokRxInfo::new(words.len() as u32, eos);
        let trie = TokTrie::from(&info, &words).with_eos_tokens(&end_of_generation);
        // Greedy tokenization is enough: llguidance tokenizes only to force tokens, which the
        // decoder does not ask for.
        Grammars::for_vocabulary(Arc::new(ApproximateTokEnv::new(trie)))
    }

    fn for_vocabulary(env: TokEnv) -> Result<Grammars, String> {
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
        factory.quiet();
        Ok(Grammars { factory })
    }

    /// A constraint for replies that follow `schema`; an error says why the schema cannot be
    /// compiled.
    pub(crate) fn constraint(&self, schema: &Value) -> Result<Constraint, String> {
        let mut schema = match schema {
            Value::Bool(true) => json!({}),
            other => other.clone(),
        };
        closed_objects(&mut schema);
        if let Value::Object(map) = &mut schema {
            map.entry("x-guidance").or_insert_with(|| {
                json!({"whitespace_pattern": format!("[\\x20\\x0A\\x0D\\x09]{{1,{MAX_WHITESPACE}}}")})
            });
        }
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_json_schema(schema))
            .map_err(|e| e.to_string())?;
        let mut matcher = Matcher::new(Ok(parser));
        let mask = matcher.compute_mask().map_err(|e| e.to_string())?;
        Ok(Constraint { matcher, mask })
    }
}

/// Gives every object schema with `properties` and no `additionalProperties` an
/// `"additionalProperties": false`, as llama.cpp's server reads a schema (JSON Schema's own
/// default allows any other key, and a small model given that freedom invents keys until its
/// token budget runs out).
fn closed_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    // Maps of names to schemas.
                    "properties" | "$defs" | "definitions" => {
                        if let Value::Object(schemas) = value {
                            schemas.values_mut().for_each(closed_objects);
                        }
                    }
                    // A schema or a list of schemas.
                    "items"
                    | "prefixItems"
                    | "anyOf"
                    | "oneOf"
                    | "allOf"
                    | "not"
                    | "additionalProperties" => closed_objects(value),
                    _ => {}
                }
            }
        }
        Value::Array(schemas) => schemas.iter_mut().for_each(closed_objects),
        _ => {}
    }
}

/// The tokens allowed next in one reply.
pub(crate) struct Constraint {
    matcher: Matcher,
    mask: SimpleVob,
}

impl Constraint {
    /// Whether `id` may come next (an end-of-generation token only once the JSON is complete).
    pub(crate) fn allows(&self, id: TokenId) -> bool {
        self.mask.is_allowed(id)
    }

    /// Takes the sampled token; true when the JSON value is complete and nothing may follow.
    pub(crate) fn advance(&mut self, id: TokenId) -> Result<bool, String> {
        self.matcher.consume_token(id).map_err(|e| e.to_string())?;
        if self.matcher.is_stopped() {
            return Ok(true);
        }
        self.mask = self.matcher.compute_mask().map_err(|e| e.to_string())?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    /// Grammars over a vocabulary of one token per byte (token id = byte), plus a few special
    /// tokens, the last of which ends generation.
    fn grammars() -> &'static Grammars {
        static GRAMMARS: OnceLock<Grammars> = OnceLock::new();
        GRAMMARS.get_or_init(|| {
            Grammars::for_vocabulary(ApproximateTokEnv::single_byte_env()).expect("grammars")
        })
    }

    /// Feeds `text` byte by byte: `None` if a byte is refused, else whether the JSON is complete.
    fn feed(schema: &Value, text: &str) -> Option<bool> {
        let mut constraint = grammars().constraint(schema).expect("schema compiles");
        let mut complete = false;
        for byte in text.bytes() {
            if complete || !constraint.allows(TokenId::from(byte)) {
                return None;
            }
            complete = constraint.advance(TokenId::from(byte)).ok()?;
        }
        Some(complete)
    }

    /// The generator's own schema, one candidate.
    fn candidates_schema() -> Value {
        hierarag_generate::prompt::candidates_schema(1).schema
    }

    #[test]
    fn object_schema_accepts_valid_documents_and_their_prefixes() {
        let object = json!({"type": "object"});
        let doc = r#"{"a": [1, -2.5e3, true, null, {"b": "x\"y\u001fé"}], "c": {}}"#;
        assert_eq!(feed(&object, doc), Some(true));
        for end in (0..doc.len()).filter(|&end| doc.is_char_boundary(end)) {
            assert_eq!(feed(&object, &doc[..end]), Some(false), "{:?}", &doc[..end]);
        }
        assert_eq!(feed(&object, &format!("{doc} ")), None);
        // llguidance writes JSON's one spelling of a string: a `\u` escape only for a control
        // character, every other character as itself.
        assert_eq!(feed(&object, r#"{"b": "\u00e9"}"#), None);
        assert_eq!(feed(&object, r#"{"b": "é"}"#), Some(true));
    }

    #[test]
    fn object_schema_refuses_invalid_text() {
        let object = json!({"type": "object"});
        for bad in [
            "[",
            "\"a\"",
            "1",
            "{a",
            "{\"a\" 1",
            "{\"a\":}",
            "{\"a\":01",
            "{\"a\":tru ",
            "{,",
            "{\"a\n",
        ] {
            assert_eq!(feed(&object, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn whitespace_between_tokens_is_bounded() {
        let object = json!({"type": "object"});
        let spaces = " ".repeat(MAX_WHITESPACE);
        assert_eq!(feed(&object, &format!("{{{spaces}}}")), Some(true));
        assert_eq!(feed(&object, &format!("{{{spaces} ")), None);
    }

    #[test]
    fn schema_forces_keys_in_order_item_counts_and_types() {
        let schema = candidates_schema();
        let good = r#"{"candidates": [{"question": "Why?", "answer": "Because."}]}"#;
        assert_eq!(feed(&schema, good), Some(true));
        for bad in [
            r#"{"answers""#,
            r#"{"candidates": []"#,
            r#"{"candidates": [{"answer""#,
            r#"{"candidates": [{"question": 1"#,
            r#"{"candidates": [{"question": "q"}"#,
            r#"{"candidates": [{"question": "q", "answer": "a", "x""#,
            r#"{"candidates": [{"question": "q", "answer": "a"}, {"question": "q", "answer": "a"}, "#,
        ] {
            assert_eq!(feed(&schema, bad), None, "{bad}");
        }
        let verdict = json!({
            "type": "object",
            "properties": {"candidate": {"type": "integer"}, "faithful": {"type": "boolean"}},
            "required": ["candidate", "faithful"],
            "additionalProperties": false
        });
        assert_eq!(
            feed(&verdict, r#"{"candidate": 2, "faithful": false}"#),
            Some(true)
        );
        assert_eq!(feed(&verdict, r#"{"candidate": 1.5"#), None);
        assert_eq!(
            feed(&verdict, r#"{"candidate": 1, "faithful": "yes""#),
            None
        );
    }

    #[test]
    fn objects_with_properties_take_no_other_keys_unless_the_schema_allows_them() {
        let nested = json!({
            "type": "object",
            "properties": {"a": {"type": "array", "items": {
                "type": "object", "properties": {"b": {"type": "string"}}
            }}}
        });
        assert_eq!(feed(&nested, r#"{"a": [{"b": "x"}]}"#), Some(true));
        assert_eq!(feed(&nested, r#"{"a": [{"b": "x", "c""#), None);
        assert_eq!(feed(&nested, r#"{"a": [], "c""#), None);
        let open = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": true
        });
        assert_eq!(feed(&open, r#"{"a": 1, "c": 2}"#), Some(true));
    }

    #[test]
    fn a_schema_that_cannot_be_compiled_is_an_error() {
        assert!(grammars().constraint(&json!({"type": "strnig"})).is_err());
        assert!(grammars().constraint(&json!(false)).is_err());
    }
}
