// Chat template rendering and JSON-schema-to-grammar conversion (stateless helpers).
use std::os::raw::c_char;
use std::ptr;

use crate::error::{check, Result};
use crate::model::Model;
use crate::options::Options;
use crate::sys;
use crate::util::{c_opt, c_string, opt_ptr, read_text, static_str};

/// Arguments of chat_render beyond the messages.
#[derive(Default)]
pub struct ChatRender<'a> {
    /// Template source; None renders the model's default template.
    pub template: Option<&'a str>,
    /// JSON array of tool schemas.
    pub tools_json: Option<&'a str>,
    /// JSON object of extra template variables, e.g. {"enable_thinking": false}.
    pub extra_vars_json: Option<&'a str>,
    pub add_generation_prompt: bool,
    /// IKLLM_OPTIONS_CHAT options ("now", "max_output_bytes").
    pub options: Option<&'a Options>,
}

/// Renders a chat template over messages_json (a JSON array of {"role", "content"} objects) as
/// transformers' apply_chat_template(tokenize=False) does. model may be None when a template
/// is given. Errors: Status::TEMPLATE for template failures, INVALID_ARGUMENT for bad JSON.
pub fn chat_render(model: Option<&Model>, messages_json: &str, args: ChatRender<'_>) -> Result<String> {
    let m = model.map_or(ptr::null(), |m| m.raw());
    let template = c_opt(args.template)?;
    let messages = c_string(messages_json)?;
    let tools = c_opt(args.tools_json)?;
    let extra = c_opt(args.extra_vars_json)?;
    let options = args.options.map_or(ptr::null(), |o| o.raw as *const _);
    read_text(|buf: *mut c_char, size, needed| unsafe {
        sys::ikllm_chat_render(
            m,
            opt_ptr(&template),
            messages.as_ptr(),
            opt_ptr(&tools),
            opt_ptr(&extra),
            args.add_generation_prompt as i32,
            options,
            buf,
            size,
            needed,
        )
    })
}

/// Converts a JSON Schema to GBNF grammar text (start rule "root"); Status::GRAMMAR on problems.
pub fn json_schema_to_grammar(schema_json: &str) -> Result<String> {
    let s = c_string(schema_json)?;
    let mut out: *mut c_char = ptr::null_mut();
    check(unsafe { sys::ikllm_json_schema_to_grammar(s.as_ptr(), &mut out) })?;
    let text = unsafe { static_str(out) }.to_string();
    unsafe { sys::ikllm_free(out as *mut _) };
    Ok(text)
}
