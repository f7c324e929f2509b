// Errors: every failing C call becomes an Error carrying its status and the library's message.
use std::fmt;

use crate::sys;
use crate::util::static_str;

/// A status code of the C API (`IKLLM_OK`, `IKLLM_ERR_*`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const OK: Status = Status(sys::IKLLM_OK);
    pub const INVALID_ARGUMENT: Status = Status(sys::IKLLM_ERR_INVALID_ARGUMENT);
    pub const IO: Status = Status(sys::IKLLM_ERR_IO);
    pub const INVALID_FILE: Status = Status(sys::IKLLM_ERR_INVALID_FILE);
    pub const UNSUPPORTED: Status = Status(sys::IKLLM_ERR_UNSUPPORTED);
    pub const OUT_OF_MEMORY: Status = Status(sys::IKLLM_ERR_OUT_OF_MEMORY);
    pub const CANCELLED: Status = Status(sys::IKLLM_CANCELLED);
    pub const CONTEXT_FULL: Status = Status(sys::IKLLM_CONTEXT_FULL);
    pub const END_OF_GENERATION: Status = Status(sys::IKLLM_END_OF_GENERATION);
    pub const BUFFER_TOO_SMALL: Status = Status(sys::IKLLM_ERR_BUFFER_TOO_SMALL);
    pub const NOT_FOUND: Status = Status(sys::IKLLM_ERR_NOT_FOUND);
    pub const INTERNAL: Status = Status(sys::IKLLM_ERR_INTERNAL);
    pub const GRAMMAR: Status = Status(sys::IKLLM_ERR_GRAMMAR);
    pub const TEMPLATE: Status = Status(sys::IKLLM_ERR_TEMPLATE);
    pub const INCOMPATIBLE_STATE: Status = Status(sys::IKLLM_ERR_INCOMPATIBLE_STATE);

    /// The library's name for the status, e.g. "IKLLM_ERR_IO".
    pub fn name(self) -> &'static str {
        unsafe { static_str(sys::ikllm_status_name(self.0)) }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// A failed call: the status and the library's message.
#[derive(Clone, Debug)]
pub struct Error {
    status: Status,
    message: String,
    tensor: String,
    offset: Option<u64>,
    bytes_needed: Option<u64>,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into(), tensor: String::new(), offset: None, bytes_needed: None }
    }
    /// The error of the last failing call on this thread (Rust threads are OS threads, and the
    /// message is read right after the call, before any other call can replace it).
    pub(crate) fn last(status: i32) -> Error {
        let known = |v: u64| if v == u64::MAX { None } else { Some(v) };
        unsafe {
            Error {
                status: Status(status),
                message: static_str(sys::ikllm_last_error()).to_string(),
                tensor: static_str(sys::ikllm_last_error_tensor()).to_string(),
                offset: known(sys::ikllm_last_error_offset()),
                bytes_needed: known(sys::ikllm_last_error_bytes_needed()),
            }
        }
    }
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Tensor the failure concerns ("" when none or unknown).
    pub fn tensor(&self) -> &str {
        &self.tensor
    }
    /// File offset of the failure, when known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
    /// Bytes that were needed, when known.
    pub fn bytes_needed(&self) -> Option<u64> {
        self.bytes_needed
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Ok(()) for IKLLM_OK, else the thread's last error.
pub(crate) fn check(status: i32) -> Result<()> {
    if status == sys::IKLLM_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}
