//! Safe Rust binding of ikllm, an embeddable LLM inference engine for GGUF models.
//!
//! The raw layer [`sys`] is generated from `bindings/abi.json` (run `gen/gen_sys.py`); everything
//! else is a thin safe layer over it. Ownership follows the C API's threading contract:
//! [`Library`] and [`Model`] are `Send + Sync` (share them, e.g. in an `Arc`), while [`Session`],
//! [`Sampler`] and [`Detokenizer`] are `Send` but not `Sync` (one thread at a time). Objects keep
//! what they were created from alive (a session holds its model, a model its library), so they
//! may be dropped in any order.
#[rustfmt::skip] // generated: gen/gen_sys.py writes it
pub mod sys;

mod chat;
mod chat_parser;
mod detok;
mod error;
mod generate;
mod library;
mod model;
mod options;
mod sampler;
mod session;
mod state;
mod tensors;
mod util;

pub use chat::{chat_render, json_schema_to_grammar, ChatRender};
pub use chat_parser::{chat_parse, ChatParse, ChatParser, ToolCall};
pub use detok::Detokenizer;
pub use error::{Error, Result, Status};
pub use generate::{Generate, Piece};
pub use library::{abi_version, version_number, version_string, CancelFlag, Library, LogLevel};
pub use model::{LoadOptions, Model, SpecialToken, TokenizeFlags};
pub use options::{option_info, OptionInfo, OptionKind, OptionType, Options};
pub use sampler::{GrammarState, Sampler};
pub use session::{Batch, Session};
pub use tensors::{quantize, type_name, QuantizeStep, TensorInfo};

/// A token id of the model's vocabulary.
pub type Token = i32;
