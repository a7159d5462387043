//! The integration tests of `hierarag-metrics`, one binary: each module is one former test file.

mod multilingual_oracle;
mod properties;
mod pytrec_eval_oracle;
mod text_oracle;
mod trec_eval_files;
