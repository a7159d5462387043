//! The llama transformer: our own quantized matmuls and attention, a preallocated KV cache,
//! and the small element-wise steps written out the way ggml computes them.
//!
//! It started as a local variant of `candle_transformers::models::quantized_llama`; candle now
//! only reads the GGUF. The matmuls run on the weights as stored (Q4_1 layers, Q8_0 output) with
//! SIMD kernels of our own ([`crate::quant`]), Q, K and V (and gate and up) fused into one
//! matmul each; attention ([`crate::attention`]) is llama.cpp's CPU flash attention; the KV cache
//! is allocated once and written in place; the context is the model's own (8192); and RMS norm,
//! RoPE (the same cos/sin table ggml builds), SwiGLU and the f16 rounding of the KV cache follow
//! llama.cpp, so that greedy decoding matches it token for token except at near ties.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Seek};

use candle_core::Device;
use candle_core::quantized::{GgmlDType, QStorage, QTensor, gguf_file};
use half::f16;

use crate::attention;
use crate::quant::{PackedMatrix, QuantType};

/// Prompt tokens processed per forward pass, as llama.cpp's default micro-batch; bounds the
/// attention scores kept in memory.
const PREFILL_CHUNK: usize = 256;

/// Hyperparameters read from `llama.*` metadata.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    pub n_ff: usize,
    pub rms_eps: f32,
    pub rope_base: f32,
    pub context_length: usize,
    pub vocab_size: usize,
}

#[derive(Debug)]
struct Layer {
    attn_norm: Vec<f32>,
    /// Q, K and V rows stacked: `(n_embd + 2 * n_kv_head * head_dim, n_embd)`.
    qkv: PackedMatrix,
    wo: PackedMatrix,
    ffn_norm: Vec<f32>,
    /// Gate and up rows stacked: `(2 * n_ff, n_embd)`.
    gate_up: PackedMatrix,
    down: PackedMatrix,
    /// `(n_kv_head, max_context, head_dim)`, written in place (pages are only touched as far
    /// as a sequence goes).
    k_cache: Vec<f32>,
    v_cache: Vec<f32>,
}

/// Token embeddings, looked up row by row.
#[derive(Debug)]
enum Embeddings {
    /// Q8_0 rows dequantized on demand from the raw blocks (34 bytes per 32 values).
    Q8_0(Vec<u8>),
    /// Any other type, dequantized once at load.
    F32(Vec<f32>),
}

/// The transformer with its KV cache; one sequence at a time.
#[derive(Debug)]
pub(crate) struct Model {
    pub config: Config,
    embeddings: Embeddings,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    output: PackedMatrix,
    /// `cos`/`sin` per position and pair, `[pos * head_dim/2 + i]`.
    rope_cos: Vec<f32>,
    rope_sin: Vec<f32>,
    max_context: usize,
    /// Positions held in the KV cache.
    n_cached: usize,
}

/// What went wrong while reading weights, with the tensor or key at fault.
#[derive(Debug)]
pub(crate) struct LoadError(pub String);

fn load_err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> LoadError {
    LoadError(format!("{what}: {e}"))
}

impl Model {
    /// Reads the weights of a `llama` GGUF. Q4_1 and Q8_0 matrices are computed as stored; with
    /// `requantize` Q4_1 ones (and always those of any other type) become Q8_0 (dequantized,
    /// then quantized again).
    pub fn load<R: Read + Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
        requantize: bool,
        max_context: usize,
    ) -> Result<Model, LoadError> {
        let device = Device::Cpu;
        let md = |key: &str| {
            content
                .metadata
                .get(key)
                .ok_or_else(|| LoadError(format!("metadata key {key} is missing")))
        };
        let md_usize = |key: &str| -> Result<usize, LoadError> {
            md(key)?
                .to_u32()
                .map(|v| v as usize)
                .map_err(|e| load_err(key, e))
        };
        let arch = md("general.architecture")?
            .to_string()
            .map_err(|e| load_err("general.architecture", e))?;
        if arch != "llama" {
            return Err(LoadError(format!(
                "general.architecture is {arch:?}; only \"llama\" is supported"
            )));
        }
        let n_embd = md_usize("llama.embedding_length")?;
        let n_head = md_usize("llama.attention.head_count")?;
        let n_kv_head = md_usize("llama.attention.head_count_kv")?;
        let head_dim = n_embd / n_head;
        let rope_dim = md_usize("llama.rope.dimension_count").unwrap_or(head_dim);
        if rope_dim != head_dim || n_head % n_kv_head != 0 || head_dim != 64 {
            return Err(LoadError(format!(
                "unsupported shape: {n_head} heads, {n_kv_head} KV heads, head size {head_dim}, \
                 rope size {rope_dim}"
            )));
        }
        let config = Config {
            n_layer: md_usize("llama.block_count")?,
            n_embd,
            n_head,
            n_kv_head,
            head_dim,
            n_ff: md_usize("llama.feed_forward_length")?,
            rms_eps: md("llama.attention.layer_norm_rms_epsilon")?
                .to_f32()
                .map_err(|e| load_err("llama.attention.layer_norm_rms_epsilon", e))?,
            rope_base: match content.metadata.get("llama.rope.freq_base") {
                Some(v) => v
                    .to_f32()
                    .map_err(|e| load_err("llama.rope.freq_base", e))?,
                None => 10_000.0,
            },
            context_length: md_usize("llama.context_length")?,
            vocab_size: 0,
        };
        let max_context = max_context.min(config.context_length).max(1);

        let mut tensor = |name: &str| -> Result<QTensor, LoadError> {
            content
                .tensor(reader, name, &device)
                .map_err(|e| load_err(format!("tensor {name}"), e))
        };
        // Q4_1 and Q8_0 are computed as stored; any other type (and Q4_1 when asked to
        // requantize) becomes Q8_0.
        let matmul_weight = |t: QTensor, name: &str| -> Result<QTensor, LoadError> {
            match t.dtype() {
                GgmlDType::Q8_0 => Ok(t),
                GgmlDType::Q4_1 if !requantize => Ok(t),
                _ => {
                    let dense = t.dequantize(&Device::Cpu).map_err(|e| load_err(name, e))?;
                    QTensor::quantize(&dense, GgmlDType::Q8_0).map_err(|e| load_err(name, e))
                }
            }
        };

        let token_embd = tensor("token_embd.weight")?;
        let (vocab_size, embd_cols) = token_embd
            .shape()
            .dims2()
            .map_err(|e| load_err("token_embd.weight", e))?;
        if embd_cols != n_embd {
            return Err(LoadError(format!(
                "token_embd.weight has rows of {embd_cols}, expected {n_embd}"
            )));
        }
        let embeddings = if token_embd.dtype() == GgmlDType::Q8_0 {
            Embeddings::Q8_0(
                token_embd
                    .data()
                    .map_err(|e| load_err("token_embd.weight", e))?
                    .into_owned(),
            )
        } else {
            Embeddings::F32(
                token_embd
                    .dequantize(&device)
                    .and_then(|t| t.flatten_all())
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(|e| load_err("token_embd.weight", e))?,
            )
        };
        let output = match content.tensor_infos.contains_key("output.weight") {
            true => tensor("output.weight")?,
            false => token_embd,
        };
        let output = pack(matmul_weight(output, "output.weight")?, "output.weight")?;
        let output_norm = dense_vector(tensor("output_norm.weight")?, "output_norm.weight")?;

        let mut layers = Vec::with_capacity(config.n_layer);
        for i in 0..config.n_layer {
            let name = |suffix: &str| format!("blk.{i}.{suffix}.weight");
            let mut weight = |suffix: &str| -> Result<QTensor, LoadError> {
                let name = name(suffix);
                matmul_weight(tensor(&name)?, &name)
            };
            let q = weight("attn_q")?;
            let k = weight("attn_k")?;
            let v = weight("attn_v")?;
            let qkv = stack_rows(&[q, k, v], &name("attn_qkv"))?;
            let wo = weight("attn_output")?;
            let gate = weight("ffn_gate")?;
            let up = weight("ffn_up")?;
            let gate_up = stack_rows(&[gate, up], &name("ffn_gate_up"))?;
            let down = weight("ffn_down")?;
            let attn_norm = dense_vector(tensor(&name("attn_norm"))?, &name("attn_norm"))?;
            let ffn_norm = dense_vector(tensor(&name("ffn_norm"))?, &name("ffn_norm"))?;
            let cache = || vec![0f32; n_kv_head * max_context * head_dim];
            layers.push(Layer {
                attn_norm,
                qkv: pack(qkv, &name("attn_qkv"))?,
                wo: pack(wo, &name("attn_output"))?,
                ffn_norm,
                gate_up: pack(gate_up, &name("ffn_gate_up"))?,
                down: pack(down, &name("ffn_down"))?,
                k_cache: cache(),
                v_cache: cache(),
            });
        }

        let (rope_cos, rope_sin) = rope_table(head_dim, config.rope_base, max_context);
        Ok(Model {
            config: Config {
                vocab_size,
                ..config
            },
            embeddings,
            layers,
            output_norm,
            output,
            rope_cos,
            rope_sin,
            max_context,
            n_cached: 0,
        })
    }

    /// The most positions (prompt and generated tokens) a sequence may use.
    pub fn max_context(&self) -> usize {
        self.max_context
    }

    /// Forgets the cached sequence.
    pub fn reset(&mut self) {
        self.n_cached = 0;
    }

    /// Appends `tokens` to the cached sequence and returns the logits after the last one.
    pub fn forward(&mut self, tokens: &[u32]) -> candle_core::Result<Vec<f32>> {
        if tokens.is_empty() {
            candle_core::bail!("no tokens to evaluate");
        }
        if self.n_cached + tokens.len() > self.max_context {
            candle_core::bail!(
                "the sequence needs {} positions; the context holds {}",
                self.n_cached + tokens.len(),
                self.max_context
            );
        }
        let mut last_hidden = Vec::new();
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            last_hidden = self.forward_chunk(chunk)?;
        }
        let c = self.config;
        let x = rms_norm(&last_hidden, &self.output_norm, c.n_embd, c.rms_eps);
        Ok(self.output.matmul(&x))
    }

    /// Runs one chunk through every layer; returns the hidden state of its last token.
    fn forward_chunk(&mut self, tokens: &[u32]) -> candle_core::Result<Vec<f32>> {
        let c = self.config;
        let (n_embd, hd, n_head, n_kv) = (c.n_embd, c.head_dim, c.n_head, c.n_kv_head);
        let s = tokens.len();
        let pos = self.n_cached;
        let len = pos + s;
        let kv_dim = n_kv * hd;
        let qkv_dim = n_embd + 2 * kv_dim;

        let mut x = Vec::with_capacity(s * n_embd);
        for &token in tokens {
            self.embedding_row(token, &mut x)?;
        }
        let shape = attention::Shape {
            n_head,
            n_kv_head: n_kv,
            head_dim: hd,
            max_context: self.max_context,
            pos,
            s,
        };

        let mut q_buf = vec![0f32; n_head * s * hd];
        for layer in &mut self.layers {
            let h = rms_norm(&x, &layer.attn_norm, n_embd, c.rms_eps);
            let qkv = layer.qkv.matmul(&h);
            // RoPE on Q and K, then everything rounded to f16 as llama.cpp's f16 KV cache (and
            // its f16 conversion of Q for the K·Q product) does. Q is laid out (head, token, d)
            // so that each KV head's group of query heads is one contiguous matrix; K and V go
            // straight into the cache at their positions.
            for t in 0..s {
                let p = pos + t;
                let row = &qkv[t * qkv_dim..(t + 1) * qkv_dim];
                for head in 0..n_head {
                    let dst = &mut q_buf[(head * s + t) * hd..(head * s + t + 1) * hd];
                    rope(
                        &self.rope_cos,
                        &self.rope_sin,
                        &row[head * hd..(head + 1) * hd],
                        p,
                        dst,
                    );
                }
                for head in 0..n_kv {
                    let at = (head * self.max_context + p) * hd;
                    let k = &mut layer.k_cache[at..at + hd];
                    rope(
                        &self.rope_cos,
                        &self.rope_sin,
                        &row[n_embd + head * hd..n_embd + (head + 1) * hd],
                        p,
                        k,
                    );
                    round_f16(k);
                    let src = &row[n_embd + kv_dim + head * hd..n_embd + kv_dim + (head + 1) * hd];
                    let v = &mut layer.v_cache[at..at + hd];
                    v.copy_from_slice(src);
                    round_f16(v);
                }
            }
            round_f16(&mut q_buf);
            let attn = attention::attend(shape, &q_buf, &layer.k_cache, &layer.v_cache);
            let o = layer.wo.matmul(&attn);
            add_assign(&mut x, &o);

            let h = rms_norm(&x, &layer.ffn_norm, n_embd, c.rms_eps);
            let gate_up = layer.gate_up.matmul(&h);
            let mut act = vec![0f32; s * c.n_ff];
            for t in 0..s {
                let row = &gate_up[t * 2 * c.n_ff..(t + 1) * 2 * c.n_ff];
                let (gate, up) = row.split_at(c.n_ff);
                for ((a, &g), &u) in act[t * c.n_ff..(t + 1) * c.n_ff]
                    .iter_mut()
                    .zip(gate)
                    .zip(up)
                {
                    *a = g / (1.0 + (-g).exp()) * u;
                }
            }
            let down = layer.down.matmul(&act);
            add_assign(&mut x, &down);
        }
        self.n_cached = len;
        Ok(x[(s - 1) * n_embd..].to_vec())
    }

    /// Appends the embedding of `token` to `out`.
    fn embedding_row(&self, token: u32, out: &mut Vec<f32>) -> candle_core::Result<()> {
        let n_embd = self.config.n_embd;
        let token = token as usize;
        if token >= self.config.vocab_size {
            candle_core::bail!("token id {token} is outside the vocabulary");
        }
        match &self.embeddings {
            Embeddings::Q8_0(raw) => {
                const BLOCK: usize = 32;
                const BLOCK_BYTES: usize = 2 + BLOCK;
                let row_bytes = n_embd / BLOCK * BLOCK_BYTES;
                let row = &raw[token * row_bytes..(token + 1) * row_bytes];
                for block in row.chunks_exact(BLOCK_BYTES) {
                    let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
                    out.extend(block[2..].iter().map(|&q| f32::from(q as i8) * d));
                }
            }
            Embeddings::F32(table) => {
                out.extend_from_slice(&table[token * n_embd..(token + 1) * n_embd]);
            }
        }
        Ok(())
    }
}

/// ggml's "normal" (interleaved pairs) RoPE of one head at position `pos`.
fn rope(cos: &[f32], sin: &[f32], src: &[f32], pos: usize, dst: &mut [f32]) {
    let half = src.len() / 2;
    let cos = &cos[pos * half..(pos + 1) * half];
    let sin = &sin[pos * half..(pos + 1) * half];
    for i in 0..half {
        let (x0, x1) = (src[2 * i], src[2 * i + 1]);
        dst[2 * i] = x0 * cos[i] - x1 * sin[i];
        dst[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
    }
}

/// Repacks a Q4_1 or Q8_0 weight matrix for [`PackedMatrix::matmul`].
fn pack(t: QTensor, name: &str) -> Result<PackedMatrix, LoadError> {
    let kind = match t.dtype() {
        GgmlDType::Q4_1 => QuantType::Q4_1,
        GgmlDType::Q8_0 => QuantType::Q8_0,
        other => {
            return Err(LoadError(format!(
                "{name}: cannot compute with {other:?} weights"
            )));
        }
    };
    let (rows, cols) = t.shape().dims2().map_err(|e| load_err(name, e))?;
    let raw = t.data().map_err(|e| load_err(name, e))?;
    PackedMatrix::from_ggml(kind, rows, cols, &raw).map_err(|e| LoadError(format!("{name}: {e}")))
}

/// ggml's RMS norm (sum of squares in f64, scale in f32) followed by the weight multiply.
fn rms_norm(x: &[f32], weight: &[f32], n: usize, eps: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks_exact(n) {
        let sum: f64 = row.iter().map(|&v| f64::from(v * v)).sum();
        let mean = (sum / n as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        out.extend(row.iter().zip(weight).map(|(&v, &w)| (v * scale) * w));
    }
    out
}

fn add_assign(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn round_f16(values: &mut [f32]) {
    for v in values {
        *v = f16::from_f32(*v).to_f32();
    }
}

/// ggml's rope cache: `theta = pos · base^(-2i/d)`, the power built by repeated f32
/// multiplication as `ggml_rope_cache_init` does, then `cosf`/`sinf`.
fn rope_table(head_dim: usize, base: f32, max_context: usize) -> (Vec<f32>, Vec<f32>) {
    let half = head_dim / 2;
    let theta_scale = base.powf(-2.0 / head_dim as f32);
    let mut cos = Vec::with_capacity(max_context * half);
    let mut sin = Vec::with_capacity(max_context * half);
    for pos in 0..max_context {
        let mut theta = pos as f32;
        for _ in 0..half {
            cos.push(theta.cos());
            sin.push(theta.sin());
            theta *= theta_scale;
        }
    }
    (cos, sin)
}

/// A small f32 tensor (a norm weight) as a vector.
fn dense_vector(t: QTensor, name: &str) -> Result<Vec<f32>, LoadError> {
    t.dequantize(&Device::Cpu)
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1::<f32>())
        .map_err(|e| load_err(name, e))
}

/// Stacks weight matrices of one type row-wise into one (rows are independent blocks).
fn stack_rows(parts: &[QTensor], name: &str) -> Result<QTensor, LoadError> {
    let dtype = parts[0].dtype();
    let mut cols = None;
    let mut rows = 0;
    let mut bytes = Vec::new();
    for part in parts {
        let (r, c) = part.shape().dims2().map_err(|e| load_err(name, e))?;
        if part.dtype() != dtype || cols.is_some_and(|cols| cols != c) {
            return Err(LoadError(format!(
                "{name}: cannot stack {:?} {:?} with {dtype:?} rows of {cols:?}",
                part.dtype(),
                part.shape()
            )));
        }
        cols = Some(c);
        rows += r;
        bytes.extend_from_slice(&part.data().map_err(|e| load_err(name, e))?);
    }
    let storage = QStorage::from_data(Cow::Owned(bytes), &Device::Cpu, dtype)
        .map_err(|e| load_err(name, e))?;
    QTensor::new(storage, (rows, cols.unwrap_or(0))).map_err(|e| load_err(name, e))
}

/// The tensor types of a GGUF, counted, for logs.
pub(crate) fn dtype_counts(content: &gguf_file::Content) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for info in content.tensor_infos.values() {
        *counts.entry(format!("{:?}", info.ggml_dtype)).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_table_starts_at_identity() {
        let (cos, sin) = rope_table(4, 10_000.0, 2);
        assert_eq!(&cos[..2], &[1.0, 1.0]);
        assert_eq!(&sin[..2], &[0.0, 0.0]);
        assert!((cos[2] - 1f32.cos()).abs() < 1e-7);
    }

    #[test]
    fn rms_norm_scales_to_unit_rms() {
        let y = rms_norm(&[3.0, 4.0], &[1.0, 1.0], 2, 0.0);
        let rms = ((y[0] * y[0] + y[1] * y[1]) / 2.0).sqrt();
        assert!((rms - 1.0).abs() < 1e-6);
    }
}
