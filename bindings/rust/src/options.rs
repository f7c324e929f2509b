// Options objects (typed settings by string key) and the library's own option listing.
use std::ptr;

use crate::error::{check, Result};
use crate::sys;
use crate::util::{c_string, static_str};

/// Which call an options object configures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    Model = sys::IKLLM_OPTIONS_MODEL as isize,
    Session = sys::IKLLM_OPTIONS_SESSION as isize,
    Sampler = sys::IKLLM_OPTIONS_SAMPLER as isize,
    Quantize = sys::IKLLM_OPTIONS_QUANTIZE as isize,
    Chat = sys::IKLLM_OPTIONS_CHAT as isize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionType {
    Int,
    Float,
    String,
    /// A type this binding does not know yet (the raw IKLLM_OPTION_* value).
    Other(i32),
}

/// One option as the library describes it.
#[derive(Clone, Debug)]
pub struct OptionInfo {
    pub name: &'static str,
    pub ty: OptionType,
    pub default: &'static str,
    pub min: &'static str,
    pub max: &'static str,
    pub doc: &'static str,
}

/// Every option of a kind, in the library's order.
pub fn option_info(kind: OptionKind) -> Result<Vec<OptionInfo>> {
    let n = unsafe { sys::ikllm_option_count(kind as i32) };
    let mut out = Vec::with_capacity(n.max(0) as usize);
    for i in 0..n {
        let (mut name, mut def, mut min, mut max, mut doc) =
            (ptr::null(), ptr::null(), ptr::null(), ptr::null(), ptr::null());
        let mut ty = 0;
        check(unsafe {
            sys::ikllm_option_info(kind as i32, i, &mut name, &mut ty, &mut def, &mut min, &mut max, &mut doc)
        })?;
        // Option strings are static in the library.
        out.push(unsafe {
            OptionInfo {
                name: static_str(name),
                ty: match ty {
                    sys::IKLLM_OPTION_INT => OptionType::Int,
                    sys::IKLLM_OPTION_FLOAT => OptionType::Float,
                    sys::IKLLM_OPTION_STRING => OptionType::String,
                    other => OptionType::Other(other),
                },
                default: static_str(def),
                min: static_str(min),
                max: static_str(max),
                doc: static_str(doc),
            }
        });
    }
    Ok(out)
}

/// An options object of one kind, every key at its default until set.
pub struct Options {
    pub(crate) raw: *mut sys::ikllm_options,
    kind: OptionKind,
}

// A plain value object: movable between threads, not shared.
unsafe impl Send for Options {}

impl Drop for Options {
    fn drop(&mut self) {
        unsafe { sys::ikllm_options_free(self.raw) }
    }
}

impl Options {
    pub fn new(kind: OptionKind) -> Result<Options> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::ikllm_options_create(kind as i32, &mut raw) })?;
        Ok(Options { raw, kind })
    }
    pub fn kind(&self) -> OptionKind {
        self.kind
    }
    pub fn set_int(&mut self, key: &str, value: i64) -> Result<&mut Options> {
        let k = c_string(key)?;
        check(unsafe { sys::ikllm_options_set_int(self.raw, k.as_ptr(), value) })?;
        Ok(self)
    }
    pub fn set_float(&mut self, key: &str, value: f64) -> Result<&mut Options> {
        let k = c_string(key)?;
        check(unsafe { sys::ikllm_options_set_float(self.raw, k.as_ptr(), value) })?;
        Ok(self)
    }
    pub fn set_string(&mut self, key: &str, value: &str) -> Result<&mut Options> {
        let (k, v) = (c_string(key)?, c_string(value)?);
        check(unsafe { sys::ikllm_options_set_string(self.raw, k.as_ptr(), v.as_ptr()) })?;
        Ok(self)
    }
    /// Sets from text ("512", "0.8", "f16"), converted to the key's type.
    pub fn set_text(&mut self, key: &str, value: &str) -> Result<&mut Options> {
        let (k, v) = (c_string(key)?, c_string(value)?);
        check(unsafe { sys::ikllm_options_set_from_text(self.raw, k.as_ptr(), v.as_ptr()) })?;
        Ok(self)
    }
    pub fn get_int(&self, key: &str) -> Result<i64> {
        let k = c_string(key)?;
        let mut v = 0;
        check(unsafe { sys::ikllm_options_get_int(self.raw, k.as_ptr(), &mut v) })?;
        Ok(v)
    }
    pub fn get_float(&self, key: &str) -> Result<f64> {
        let k = c_string(key)?;
        let mut v = 0.0;
        check(unsafe { sys::ikllm_options_get_float(self.raw, k.as_ptr(), &mut v) })?;
        Ok(v)
    }
    pub fn get_string(&self, key: &str) -> Result<String> {
        let k = c_string(key)?;
        let mut v = ptr::null();
        check(unsafe { sys::ikllm_options_get_string(self.raw, k.as_ptr(), &mut v) })?;
        Ok(unsafe { static_str(v) }.to_string())
    }
}
