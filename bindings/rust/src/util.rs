// Conversions between Rust values and the C API's strings and caller buffers.
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;

use crate::error::{check, Error, Result, Status};
use crate::sys;

/// A borrowed C string as &str ("" for NULL). The library only produces valid UTF-8.
/// Safety: p is NULL or NUL-terminated and outlives 'a.
pub(crate) unsafe fn static_str<'a>(p: *const c_char) -> &'a str {
    if p.is_null() {
        return "";
    }
    let bytes = CStr::from_ptr(p).to_bytes();
    std::str::from_utf8(bytes).unwrap_or("")
}

/// An owned copy of a borrowed C string (None for NULL).
pub(crate) unsafe fn opt_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(String::from_utf8_lossy(CStr::from_ptr(p).to_bytes()).into_owned())
    }
}

/// A NUL-terminated copy of s; an interior NUL is an invalid argument.
pub(crate) fn c_string(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(Status::INVALID_ARGUMENT, "string contains a NUL byte"))
}

/// Optional string argument: None -> NULL.
pub(crate) fn c_opt(s: Option<&str>) -> Result<Option<CString>> {
    s.map(c_string).transpose()
}

pub(crate) fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// Calls f(buf, size, &needed) with the caller-buffer convention (size query first, then fill)
/// and returns the bytes written, without the terminating NUL.
pub(crate) fn read_bytes<F>(mut f: F) -> Result<Vec<u8>>
where
    F: FnMut(*mut c_char, usize, *mut usize) -> i32,
{
    let mut needed = 0usize;
    let st = f(ptr::null_mut(), 0, &mut needed);
    if st != sys::IKLLM_OK && st != sys::IKLLM_ERR_BUFFER_TOO_SMALL {
        return Err(Error::last(st));
    }
    loop {
        let mut buf = vec![0u8; needed.max(1)];
        let size = buf.len();
        let st = f(buf.as_mut_ptr() as *mut c_char, size, &mut needed);
        if st == sys::IKLLM_ERR_BUFFER_TOO_SMALL && needed > size {
            continue; // the value grew between the calls
        }
        check(st)?;
        buf.truncate(needed.saturating_sub(1));
        return Ok(buf);
    }
}

/// As read_bytes, as a String (the library's text is UTF-8).
pub(crate) fn read_text<F>(f: F) -> Result<String>
where
    F: FnMut(*mut c_char, usize, *mut usize) -> i32,
{
    let bytes = read_bytes(f)?;
    Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// A borrowed (pointer, length) text from the library as &str.
/// Safety: p points to len valid bytes (or len is 0) that outlive 'a.
pub(crate) unsafe fn borrowed_str<'a>(p: *const c_char, len: usize) -> &'a str {
    if p.is_null() || len == 0 {
        return "";
    }
    let bytes = std::slice::from_raw_parts(p as *const u8, len);
    std::str::from_utf8(bytes).unwrap_or("")
}
