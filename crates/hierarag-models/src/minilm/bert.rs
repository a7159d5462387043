//! The BERT encoder of all-MiniLM-L6-v2: `gemm` matrix products, element-wise work in Rust.
//!
//! The computation is Hugging Face's `BertModel` (absolute positions, one token type, exact
//! GELU, post-layer norm) as candle-transformers' `bert` writes it, with three changes that
//! only affect speed: the texts of a batch are packed one after the other instead of padded, so
//! no row is spent on padding and no attention mask is needed; query, key and value come from
//! one matrix product, and attention reads each head of them where that product left them;
//! matrix products call candle's kernels (the `gemm` crate) on plain slices (`matmul.rs`), and
//! nothing goes through candle's element-wise ops (see `kernels.rs`). candle reads the weights.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use super::kernels;
use super::matmul::{View, matmul};

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
    qkv_weight: Vec<f32>,
    qkv_bias: Vec<f32>,
    attention_out_weight: Vec<f32>,
    attention_out_bias: Vec<f32>,
    attention_norm: (Vec<f32>, Vec<f32>),
    intermediate_weight: Vec<f32>,
    intermediate_bias: Vec<f32>,
    output_weight: Vec<f32>,
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
        flat(&self.take(name, &[rows, columns])?)
    }

    /// A linear layer's `out × in` weight, transposed to a contiguous `in × out`.
    fn linear(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Tensor, String> {
        let tensor = self.take(name, &[outputs, inputs])?;
        tensor
            .t()
            .and_then(|t| t.contiguous())
            .map_err(|e| e.to_string())
    }

    /// [`Weights::linear`] as a row-major vector.
    fn linear_vec(
        &mut self,
        name: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<Vec<f32>, String> {
        flat(&self.linear(name, inputs, outputs)?)
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
            let qkv_weight =
                flat(&Tensor::cat(&[&query, &key, &value], 1).map_err(|e| e.to_string())?)?;
            let mut qkv_bias = weights.vector(&format!("{attention}.self.query.bias"), hidden)?;
            qkv_bias.extend(weights.vector(&format!("{attention}.self.key.bias"), hidden)?);
            qkv_bias.extend(weights.vector(&format!("{attention}.self.value.bias"), hidden)?);
            layers.push(Layer {
                qkv_weight,
                qkv_bias,
                attention_out_weight: weights.linear_vec(
                    &format!("{attention}.output.dense.weight"),
                    hidden,
                    hidden,
                )?,
                attention_out_bias: weights
                    .vector(&format!("{attention}.output.dense.bias"), hidden)?,
                attention_norm: weights.norm(&format!("{attention}.output.LayerNorm"), hidden)?,
                intermediate_weight: weights.linear_vec(
                    &format!("{prefix}.intermediate.dense.weight"),
                    hidden,
                    intermediate,
                )?,
                intermediate_bias: weights
                    .vector(&format!("{prefix}.intermediate.dense.bias"), intermediate)?,
                output_weight: weights.linear_vec(
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
        })
    }

    pub(super) fn hidden_size(&self) -> usize {
        self.config.hidden_size
    }

    /// The last hidden state of every token of every text, the texts one after the other:
    /// `Σ len × hidden_size` values, row major. Texts must be at most `max_positions` long.
    pub(super) fn forward(&self, texts: &[&[u32]]) -> candle_core::Result<Vec<f32>> {
        let hidden = self.config.hidden_size;
        let intermediate_size = self.config.intermediate_size;
        let eps = self.config.layer_norm_eps;
        let head_size = hidden / self.config.num_attention_heads;
        let scale = 1.0 / (head_size as f32).sqrt();
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
            }
        }
        let (gamma, beta) = &self.embedding_norm;
        kernels::layer_norm(&mut x, gamma, beta, eps);

        // Every layer's intermediate results, allocated once.
        let mut qkv = vec![0f32; n_rows * 3 * hidden];
        let mut context = vec![0f32; n_rows * hidden];
        let mut projected = vec![0f32; n_rows * hidden];
        let mut intermediate = vec![0f32; n_rows * intermediate_size];
        let mut scores = Vec::new();
        for layer in &self.layers {
            linear(&mut qkv, &x, hidden, &layer.qkv_weight);
            // Biases added; the queries scaled by 1/√head_size, as the scores want them.
            for row in qkv.chunks_exact_mut(3 * hidden) {
                let (query, key_value) = row.split_at_mut(hidden);
                let (query_bias, key_value_bias) = layer.qkv_bias.split_at(hidden);
                for (value, &b) in query.iter_mut().zip(query_bias) {
                    *value = (*value + b) * scale;
                }
                for (value, &b) in key_value.iter_mut().zip(key_value_bias) {
                    *value += b;
                }
            }
            self.attention(&mut context, &qkv, texts, &mut scores);
            linear(
                &mut projected,
                &context,
                hidden,
                &layer.attention_out_weight,
            );
            let (gamma, beta) = &layer.attention_norm;
            kernels::add_layer_norm(
                &mut x,
                &projected,
                &layer.attention_out_bias,
                gamma,
                beta,
                eps,
            );

            linear(&mut intermediate, &x, hidden, &layer.intermediate_weight);
            kernels::add_bias_gelu(&mut intermediate, &layer.intermediate_bias);
            linear(
                &mut projected,
                &intermediate,
                intermediate_size,
                &layer.output_weight,
            );
            let (gamma, beta) = &layer.output_norm;
            kernels::add_layer_norm(&mut x, &projected, &layer.output_bias, gamma, beta, eps);
        }
        Ok(x)
    }

    /// Multi-head self-attention of each text over its own tokens: `qkv` holds, per token, the
    /// query (scaled by 1/√head_size), key and value, biases added; writes the context vectors,
    /// `rows × hidden`, into `context`. `scores` is scratch space.
    fn attention(&self, context: &mut [f32], qkv: &[f32], texts: &[&[u32]], scores: &mut Vec<f32>) {
        let hidden = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head_size = hidden / heads;
        // Head `head` of token `token` of a text: its query, key or value (`part` 0, 1, 2) is
        // `head_size` values at this offset of `qkv`.
        let at = |token: usize, part: usize, head: usize| {
            token * 3 * hidden + part * hidden + head * head_size
        };

        let mut first_row = 0;
        for ids in texts {
            let n = ids.len();
            scores.resize(heads * n * n, 0.0);
            for head in 0..heads {
                let queries = View {
                    data: qkv,
                    offset: at(first_row, 0, head),
                    rows: n,
                    columns: head_size,
                    row_stride: 3 * hidden,
                    column_stride: 1,
                };
                // The keys transposed: head_size × n.
                let keys = View {
                    data: qkv,
                    offset: at(first_row, 1, head),
                    rows: head_size,
                    columns: n,
                    row_stride: 1,
                    column_stride: 3 * hidden,
                };
                matmul(scores, head * n * n, n, queries, keys);
            }
            kernels::softmax_rows(scores, n);
            for head in 0..heads {
                let probabilities = View {
                    data: scores,
                    offset: head * n * n,
                    rows: n,
                    columns: n,
                    row_stride: n,
                    column_stride: 1,
                };
                let values = View {
                    data: qkv,
                    offset: at(first_row, 2, head),
                    rows: n,
                    columns: head_size,
                    row_stride: 3 * hidden,
                    column_stride: 1,
                };
                matmul(
                    context,
                    first_row * hidden + head * head_size,
                    hidden,
                    probabilities,
                    values,
                );
            }
            first_row += n;
        }
    }
}

/// `out (rows × out) ← x (rows × inputs) · weight (inputs × out)`, the rows of `x` being
/// `inputs` wide.
fn linear(out: &mut [f32], x: &[f32], inputs: usize, weight: &[f32]) {
    let outputs = weight.len() / inputs;
    matmul(
        out,
        0,
        outputs,
        View::row_major(x, inputs),
        View::row_major(weight, outputs),
    );
}

/// A tensor's elements in row-major order.
fn flat(tensor: &Tensor) -> Result<Vec<f32>, String> {
    tensor
        .flatten_all()
        .and_then(|t| t.to_vec1())
        .map_err(|e| e.to_string())
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
