//! all-MiniLM-L6-v2 sentence embeddings on candle.
