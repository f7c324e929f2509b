// Splitting a chat model's output into reasoning, content and tool calls (streaming or one-shot).
use std::ptr;

use crate::error::{check, Result};
use crate::model::Model;
use crate::sys;
use crate::util::{borrowed_str, c_opt, opt_ptr, read_text, static_str};

/// Where the parser's input comes from; every field is optional.
#[derive(Default, Clone, Copy)]
pub struct ChatParse<'a> {
    /// Model whose default template selects the format when neither format nor template is given.
    pub model: Option<&'a Model>,
    /// "llama3", "hermes", "mistral", "deepseek", "generic", "none"; None / "auto" = detect.
    pub format: Option<&'a str>,
    /// Template text to detect the format from.
    pub template: Option<&'a str>,
    /// The rendered prompt the output continues (a trailing "<think>" starts in reasoning).
    pub prompt: Option<&'a str>,
    /// sys::IKLLM_CHAT_PARSE_* bits.
    pub flags: u32,
}

/// One tool call found in the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments' JSON object text.
    pub arguments: String,
}

/// Incremental parser of one reply at a time. Send, not Sync (one thread at a time).
pub struct ChatParser {
    raw: *mut sys::ikllm_chat_parser,
    _model: Option<Model>,
}

// The C contract: a chat parser is used by one thread at a time, like a detok.
unsafe impl Send for ChatParser {}

impl Drop for ChatParser {
    fn drop(&mut self) {
        unsafe { sys::ikllm_chat_parser_free(self.raw) }
    }
}

impl ChatParser {
    pub fn new(args: ChatParse<'_>) -> Result<ChatParser> {
        let (f, t, p) = (c_opt(args.format)?, c_opt(args.template)?, c_opt(args.prompt)?);
        let m = args.model.map_or(ptr::null(), |m| m.raw());
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::ikllm_chat_parser_create(m, opt_ptr(&f), opt_ptr(&t), opt_ptr(&p), args.flags, &mut raw)
        })?;
        Ok(ChatParser { raw, _model: args.model.cloned() })
    }
    /// The format in use after detection, e.g. "hermes".
    pub fn format(&self) -> &str {
        unsafe { static_str(sys::ikllm_chat_parser_format(self.raw)) }
    }
    /// Feeds generated text (special tokens rendered); returns the delta JSON.
    pub fn push(&mut self, text: &str) -> Result<&str> {
        let (mut d, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::ikllm_chat_parser_push(self.raw, text.as_ptr() as *const _, text.len(), &mut d, &mut n) })?;
        Ok(unsafe { borrowed_str(d, n) })
    }
    /// Ends the reply: (last delta JSON, whole message JSON).
    pub fn finish(&mut self) -> Result<(String, String)> {
        let (mut d, mut dn, mut m, mut mn) = (ptr::null(), 0usize, ptr::null(), 0usize);
        check(unsafe { sys::ikllm_chat_parser_finish(self.raw, &mut d, &mut dn, &mut m, &mut mn) })?;
        Ok(unsafe { (borrowed_str(d, dn).to_string(), borrowed_str(m, mn).to_string()) })
    }
    /// Starts a new reply with the same settings.
    pub fn reset(&mut self) -> Result<()> {
        check(unsafe { sys::ikllm_chat_parser_reset(self.raw) })
    }
    fn text(&self, which: i32) -> Result<&str> {
        let (mut p, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::ikllm_chat_parser_text(self.raw, which, &mut p, &mut n) })?;
        Ok(unsafe { borrowed_str(p, n) })
    }
    /// All content so far.
    pub fn content(&self) -> Result<&str> {
        self.text(sys::IKLLM_CHAT_TEXT_CONTENT)
    }
    /// All reasoning so far.
    pub fn reasoning(&self) -> Result<&str> {
        self.text(sys::IKLLM_CHAT_TEXT_REASONING)
    }
    /// Tool calls found so far.
    pub fn tool_calls(&self) -> Result<Vec<ToolCall>> {
        let n = unsafe { sys::ikllm_chat_parser_tool_call_count(self.raw) };
        let mut out = Vec::new();
        for i in 0..n {
            let (mut id, mut name, mut args) = (ptr::null(), ptr::null(), ptr::null());
            check(unsafe { sys::ikllm_chat_parser_tool_call(self.raw, i, &mut id, &mut name, &mut args) })?;
            out.push(unsafe {
                ToolCall {
                    id: static_str(id).into(),
                    name: static_str(name).into(),
                    arguments: static_str(args).into(),
                }
            });
        }
        Ok(out)
    }
}

/// One-shot: the message JSON ({"reasoning_content", "content", "tool_calls"}) of a whole reply.
pub fn chat_parse(args: ChatParse<'_>, text: &str) -> Result<String> {
    let (f, t, p) = (c_opt(args.format)?, c_opt(args.template)?, c_opt(args.prompt)?);
    let m = args.model.map_or(ptr::null(), |m| m.raw());
    read_text(|buf, size, needed| unsafe {
        sys::ikllm_chat_parse(
            m,
            opt_ptr(&f),
            opt_ptr(&t),
            opt_ptr(&p),
            args.flags,
            text.as_ptr() as *const _,
            text.len(),
            buf,
            size,
            needed,
        )
    })
}
