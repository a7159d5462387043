//! The BERT encoder of all-MiniLM-L6-v2: candle matrix products, element-wise work in Rust.
//!
//! The computation is Hugging Face's `BertModel` (absolute positions, one token type, exact
//! GELU, post-layer norm) as candle-transformers' `bert` writes it, with three changes that
//! only affect speed: the texts of a batch are packed one after the other instead of padded, so
//! no row is spent on padding and no attention mask is needed; query, key and value come from
//! one matrix product; and nothing goes through candle's element-wise ops (see `kernels.rs`).

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use super::kernels;

/// The fields of `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".to_owned()
}

impl BertConfig {
    /// Refuses configurations this encoder does not implement.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!(
                "hidden_act is {:?}, only \"gelu\" is supported",
                self.hidden_act
            ));
        }
        if self.position_embedding_type != "absolute" {
            return Err(format!(
                "position_embedding_type is {:?}, only \"absolute\" is supported",
                self.position_embedding_type
            ));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        Ok(())
    }
}

/// One transformer layer's weights. Matrices are stored `in × out`, row major, as the matrix
/// product wants its right-hand side.
struct Layer {
    qkv_weight: Tensor,
    qkv_bias: Vec<f32>,
    attention_out_weight: Tensor,
    attention_out_bias: Vec<f32>,
    attention_norm: (Vec<f32>, Vec<f32>),
    intermediate_weight: Tensor,
    intermediate_bias: Vec<f32>,
    output_weight: Tensor,
    output_bias: Vec<f32>,
    output_norm: (Vec<f32>, Vec<f32>),
}

/// The encoder: embeddings and layers, read from the safetensors weights.
pub(super) struct Encoder {
    config: BertConfig,
    word_embeddings: Vec<f32>,
    position_embeddings: Vec<f32>,
    /// Token type 0; single texts never use another.
    token_type_embedding: Vec<f32>,
    embedding_norm: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    device: Device,
}

/// Takes tensors out of the weights file by name, checking their shapes.
struct Weights {
    tensors: HashMap<String, Tensor>,
}

impl Weights {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor, String> {
        let tensor = self
            .tensors
            .remove(name)
            .ok_or_else(|| format!("tensor {name} is missing"))?;
        if tensor.dims() != shape {
            return Err(format!(
                "tensor {name} has shape {:?}, expected {shape:?}",
                tensor.dims()
            ));
        }
        tensor.to_dtype(DType::F32).map_err(|e| e.to_string())
    }

    fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>, String> {
        let tensor = self.take(name, &[len])?;
        tensor.to_vec1().map_err(|e| e.to_string())
    }

    fn matrix(&mut self, name: &str, rows: usize, columns: usize) -> Result<Vec<f32>, String> {
        let tensor = self.take(name, &[rows, columns])?;
        tensor
            .flatten_all()
            .and_then(|t| t.to_vec1())
            .map_err(|e| e.to_string())
    }

    /// A linear layer's `out × in` weight, transposed to a contiguous `in × out`.
    fn linear(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Tensor, String> {
        let tensor = self.take(name, &[outputs, inputs])?;
        tensor
            .t()
            .and_then(|t| t.contiguous())
            .map_err(|e| e.to_string())
    }

    fn norm(&mut self, prefix: &str, len: usize) -> Result<(Vec<f32>, Vec<f32>), String> {
        Ok((
            self.vector(&format!("{prefix}.weight"), len)?,
            self.vector(&format!("{prefix}.bias"), len)?,
        ))
    }
}

impl Encoder {
    /// Builds the encoder from the bytes of `model.safetensors`; errors say which tensor is
    /// missing or misshapen.
    pub(super) fn from_safetensors(bytes: &[u8], config: &BertConfig) -> Result<Encoder, String> {
        config.check()?;
        let device = Device::Cpu;
        let tensors =
            candle_core::safetensors::load_buffer(bytes, &device).map_err(|e| e.to_string())?;
        // Some exports prefix every name with `bert.`.
        let tensors = if tensors.keys().any(|name| name.starts_with("bert.")) {
            tensors
                .into_iter()
                .map(|(name, t)| (name.strip_prefix("bert.").unwrap_or(&name).to_owned(), t))
                .collect()
        } else {
            tensors
        };
        let mut weights = Weights { tensors };

        let hidden = config.hidden_size;
        let intermediate = config.intermediate_size;
        let word_embeddings = weights.matrix(
            "embeddings.word_embeddings.weight",
            config.vocab_size,
            hidden,
        )?;
        let position_embeddings = weights.matrix(
            "embeddings.position_embeddings.weight",
            config.max_position_embeddings,
            hidden,
        )?;
        let token_types = weights.matrix(
            "embeddings.token_type_embeddings.weight",
            config.type_vocab_size,
            hidden,
        )?;
        let token_type_embedding = token_types[..hidden].to_vec();
        let embedding_norm = weights.norm("embeddings.LayerNorm", hidden)?;

        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let prefix = format!("encoder.layer.{index}");
            let attention = format!("{prefix}.attention");
            let query =
                weights.linear(&format!("{attention}.self.query.weight"), hidden, hidden)?;
            let key = weights.linear(&format!("{attention}.self.key.weight"), hidden, hidden)?;
            let value =
                weights.linear(&format!("{attention}.self.value.weight"), hidden, hidden)?;
            let qkv_weight = Tensor::cat(&[&query, &key, &value], 1)
                .and_then(|t| t.contiguous())
                .map_err(|e| e.to_string())?;
            let mut qkv_bias = weights.vector(&format!("{attention}.self.query.bias"), hidden)?;
            qkv_bias.extend(weights.vector(&format!("{attention}.self.key.bias"), hidden)?);
            qkv_bias.extend(weights.vector(&format!("{attention}.self.value.bias"), hidden)?);
            layers.push(Layer {
                qkv_weight,
                qkv_bias,
                attention_out_weight: weights.linear(
                    &format!("{attention}.output.dense.weight"),
                    hidden,
                    hidden,
                )?,
                attention_out_bias: weights
                    .vector(&format!("{attention}.output.dense.bias"), hidden)?,
                attention_norm: weights.norm(&format!("{attention}.output.LayerNorm"), hidden)?,
                intermediate_weight: weights.linear(
                    &format!("{prefix}.intermediate.dense.weight"),
                    hidden,
                    intermediate,
                )?,
                intermediate_bias: weights
                    .vector(&format!("{prefix}.intermediate.dense.bias"), intermediate)?,
                output_weight: weights.linear(
                    &format!("{prefix}.output.dense.weight"),
                    intermediate,
                    hidden,
                )?,
                output_bias: weights.vector(&format!("{prefix}.output.dense.bias"), hidden)?,
                output_norm: weights.norm(&format!("{prefix}.output.LayerNorm"), hidden)?,
            });
        }

        Ok(Encoder {
            config: config.clone(),
            word_embeddings,
            position_embeddings,
            token_type_embedding,
            embedding_norm,
            layers,
            device,
        })
    }

    pub(super) fn hidden_size(&self) -> usize {
        self.config.hidden_size
    }

    /// The last hidden state of every token of every text, the texts one after the other:
    /// `Σ len × hidden_size` values, row major. Texts must be at most `max_positions` long.
    pub(super) fn forward(&self, texts: &[&[u32]]) -> candle_core::Result<Vec<f32>> {
        let hidden = self.config.hidden_size;
        let eps = self.config.layer_norm_eps;
        let n_rows: usize = texts.iter().map(|ids| ids.len()).sum();

        let mut x = vec![0f32; n_rows * hidden];
        let mut rows = x.chunks_exact_mut(hidden);
        for ids in texts {
            for (position, &id) in ids.iter().enumerate() {
                let row = rows.next().expect("one row per token");
                let word = embedding_row(&self.word_embeddings, id as usize, hidden)?;
                let position = embedding_row(&self.position_embeddings, position, hidden)?;
                for (((value, &w), &p), &t) in row
                    .iter_mut()
                    .zip(word)
                    .zip(position)
                    .zip(&self.token_type_embedding)
                {
                    *value = w + t + p;
                }
                let (gamma, beta) = &self.embedding_norm;
                kernels::layer_norm_row(row, gamma, beta, eps);
            }
        }

        for layer in &self.layers {
            let mut qkv = self.matmul(&x, n_rows, &layer.qkv_weight)?;
            for row in qkv.chunks_exact_mut(3 * hidden) {
                for (value, &b) in row.iter_mut().zip(&layer.qkv_bias) {
                    *value += b;
                }
            }
            let context = self.attention(&qkv, texts)?;
            let attention_out = self.matmul(&context, n_rows, &layer.attention_out_weight)?;
            let (gamma, beta) = &layer.attention_norm;
            kernels::add_layer_norm(
                &mut x,
                &attention_out,
                &layer.attention_out_bias,
                gamma,
                beta,
                eps,
            );

            let mut intermediate = self.matmul(&x, n_rows, &layer.intermediate_weight)?;
            kernels::add_bias_gelu(&mut intermediate, &layer.intermediate_bias);
            let output = self.matmul(&intermediate, n_rows, &layer.output_weight)?;
            let (gamma, beta) = &layer.output_norm;
            kernels::add_layer_norm(&mut x, &output, &layer.output_bias, gamma, beta, eps);
        }
        Ok(x)
    }

    /// `x (rows × in) · weight (in × out)`.
    fn matmul(&self, x: &[f32], rows: usize, weight: &Tensor) -> candle_core::Result<Vec<f32>> {
        let (inputs, _) = weight.dims2()?;
        Tensor::from_slice(x, (rows, inputs), &self.device)?
            .matmul(weight)?
            .flatten_all()?
            .to_vec1()
    }

    /// Multi-head self-attention of each text over its own tokens: `qkv` holds, per token, the
    /// query, key and value (biases added); returns the context vectors, `rows × hidden`.
    fn attention(&self, qkv: &[f32], texts: &[&[u32]]) -> candle_core::Result<Vec<f32>> {
        let hidden = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head_size = hidden / heads;
        let scale = 1.0 / (head_size as f32).sqrt();
        let n_rows: usize = texts.iter().map(|ids| ids.len()).sum();
        let mut context = vec![0f32; n_rows * hidden];

        let mut first_row = 0;
        for ids in texts {
            let n = ids.len();
            let text_qkv = &qkv[first_row * 3 * hidden..(first_row + n) * 3 * hidden];
            // (heads, n, head_size) each; the query already scaled by 1/√head_size.
            let mut q = vec![0f32; heads * n * head_size];
            let mut k = vec![0f32; heads * n * head_size];
            let mut v = vec![0f32; heads * n * head_size];
            for (token, row) in text_qkv.chunks_exact(3 * hidden).enumerate() {
                for head in 0..heads {
                    let at = (head * n + token) * head_size;
                    let from = head * head_size;
                    for (dst, &src) in q[at..at + head_size]
                        .iter_mut()
                        .zip(&row[from..from + head_size])
                    {
                        *dst = src * scale;
                    }
                    k[at..at + head_size]
                        .copy_from_slice(&row[hidden + from..hidden + from + head_size]);
                    v[at..at + head_size]
                        .copy_from_slice(&row[2 * hidden + from..2 * hidden + from + head_size]);
                }
            }
            let q = Tensor::from_vec(q, (heads, n, head_size), &self.device)?;
            let k = Tensor::from_vec(k, (heads, n, head_size), &self.device)?;
            let v = Tensor::from_vec(v, (heads, n, head_size), &self.device)?;
            let mut scores = q.matmul(&k.t()?)?.flatten_all()?.to_vec1::<f32>()?;
            kernels::softmax_rows(&mut scores, n);
            let probs = Tensor::from_vec(scores, (heads, n, n), &self.device)?;
            let heads_context = probs.matmul(&v)?.flatten_all()?.to_vec1::<f32>()?;

            let text_context = &mut context[first_row * hidden..(first_row + n) * hidden];
            for (head, head_context) in heads_context.chunks_exact(n * head_size).enumerate() {
                for (token, values) in head_context.chunks_exact(head_size).enumerate() {
                    let at = token * hidden + head * head_size;
                    text_context[at..at + head_size].copy_from_slice(values);
                }
            }
            first_row += n;
        }
        Ok(context)
    }
}

/// Row `index` of an embedding table, or an error for an id or position past its end.
fn embedding_row(table: &[f32], index: usize, width: usize) -> candle_core::Result<&[f32]> {
    table
        .get(index * width..(index + 1) * width)
        .ok_or_else(|| {
            candle_core::Error::Msg(format!(
                "index {index} is past the end of an embedding table of {} rows",
                table.len() / width
            ))
        })
}
