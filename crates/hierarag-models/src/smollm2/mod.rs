//! SmolLM2-135M-Instruct (GGUF) chat on candle.
