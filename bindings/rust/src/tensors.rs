// Model tensors (info, dequantization), KV-cache sizing and quantization.
use std::os::raw::{c_char, c_void};
use std::ptr;

use crate::error::{check, Result};
use crate::library::Library;
use crate::model::Model;
use crate::options::Options;
use crate::sys;
use crate::util::{c_string, static_str};

/// One tensor of the model file.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    /// Tensor type id; see type_name.
    pub ty: i32,
    /// Dimensions (unused ones are 1).
    pub ne: [i64; 4],
    pub bytes: u64,
}

/// Static name of a tensor type id ("q4_K", "f16"), None if unknown.
pub fn type_name(ty: i32) -> Option<&'static str> {
    let p = unsafe { sys::ikllm_type_name(ty) };
    if p.is_null() {
        None
    } else {
        Some(unsafe { static_str(p) })
    }
}

impl Model {
    /// KV-cache bytes per token for a cache type ("f16", "f32", "q8_0", ...).
    pub fn kv_bytes_per_token(&self, kv_type: &str) -> Result<u64> {
        let t = c_string(kv_type)?;
        let mut out = 0u64;
        check(unsafe { sys::ikllm_model_kv_bytes_per_token(self.raw(), t.as_ptr(), &mut out) })?;
        Ok(out)
    }
    /// Every tensor of the model, in file order.
    pub fn tensors(&self) -> Result<Vec<TensorInfo>> {
        let n = unsafe { sys::ikllm_model_tensor_count(self.raw()) };
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let (mut name, mut ty, mut ne, mut bytes) = (ptr::null(), 0, [0i64; 4], 0u64);
            check(unsafe {
                sys::ikllm_model_tensor_info(self.raw(), i, &mut name, &mut ty, ne.as_mut_ptr(), &mut bytes)
            })?;
            out.push(TensorInfo { name: unsafe { static_str(name) }.to_string(), ty, ne, bytes });
        }
        Ok(out)
    }
    /// A whole tensor decoded to f32 (rows of ne[0] values).
    pub fn tensor_dequantize(&self, name: &str) -> Result<Vec<f32>> {
        let n = c_string(name)?;
        let mut needed = 0usize;
        let st = unsafe { sys::ikllm_model_tensor_dequantize(self.raw(), n.as_ptr(), ptr::null_mut(), 0, &mut needed) };
        if st != sys::IKLLM_ERR_BUFFER_TOO_SMALL {
            check(st)?;
        }
        let mut out = vec![0f32; needed];
        check(unsafe {
            sys::ikllm_model_tensor_dequantize(self.raw(), n.as_ptr(), out.as_mut_ptr(), out.len(), &mut needed)
        })?;
        Ok(out)
    }
}

/// One converted (or planned) tensor, as ikllm_quantize reports it.
pub struct QuantizeStep<'a> {
    pub tensor: &'a str,
    pub from_type: i32,
    pub to_type: i32,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub note: &'a str,
    pub progress: f32,
}

type OnTensor<'a> = &'a mut dyn FnMut(&QuantizeStep<'_>) -> bool;

unsafe extern "C" fn on_tensor_trampoline(
    user: *mut c_void,
    name: *const c_char,
    from: i32,
    to: i32,
    before: u64,
    after: u64,
    note: *const c_char,
    progress: f32,
) -> i32 {
    let f = &mut *(user as *mut OnTensor);
    let step = QuantizeStep {
        tensor: static_str(name),
        from_type: from,
        to_type: to,
        bytes_before: before,
        bytes_after: after,
        note: static_str(note),
        progress,
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&step))) {
        Ok(true) => 0,
        _ => 1, // false or a panic cancels
    }
}

/// Quantizes the GGUF model at in_path into out_path (IKLLM_OPTIONS_QUANTIZE options). on_tensor
/// is called per tensor; returning false cancels (no output file is left). Returns the total
/// bytes before and after.
pub fn quantize(
    lib: &Library,
    in_path: &str,
    out_path: &str,
    options: Option<&Options>,
    on_tensor: Option<&mut dyn FnMut(&QuantizeStep<'_>) -> bool>,
) -> Result<(u64, u64)> {
    let (i, o) = (c_string(in_path)?, c_string(out_path)?);
    let opts = options.map_or(ptr::null(), |o| o.raw as *const _);
    let (mut before, mut after) = (0u64, 0u64);
    let st = match on_tensor {
        Some(f) => {
            let mut f: OnTensor = f;
            let user = &mut f as *mut OnTensor as *mut c_void;
            unsafe {
                sys::ikllm_quantize(
                    lib.inner.raw,
                    i.as_ptr(),
                    o.as_ptr(),
                    opts,
                    Some(on_tensor_trampoline),
                    user,
                    &mut before,
                    &mut after,
                )
            }
        }
        None => unsafe {
            sys::ikllm_quantize(
                lib.inner.raw,
                i.as_ptr(),
                o.as_ptr(),
                opts,
                None,
                ptr::null_mut(),
                &mut before,
                &mut after,
            )
        },
    };
    check(st)?;
    Ok((before, after))
}
