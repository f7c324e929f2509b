// The library instance (log sink, thread defaults), version info and cancel flags.
use std::os::raw::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use crate::error::{check, Error, Result, Status};
use crate::sys;
use crate::util::static_str;

/// IKLLM_VERSION_NUMBER of the loaded library (major * 10000 + minor * 100 + patch).
pub fn version_number() -> i32 {
    unsafe { sys::ikllm_version_number() }
}

/// The loaded library's version, e.g. "0.1.0".
pub fn version_string() -> &'static str {
    unsafe { static_str(sys::ikllm_version_string()) }
}

/// The loaded library's ABI major (part of its SONAME).
pub fn abi_version() -> i32 {
    unsafe { sys::ikllm_abi_version() }
}

/// Log severities, as the library's IKLLM_LOG_* values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug = sys::IKLLM_LOG_DEBUG as isize,
    Info = sys::IKLLM_LOG_INFO as isize,
    Warn = sys::IKLLM_LOG_WARN as isize,
    Error = sys::IKLLM_LOG_ERROR as isize,
}

impl LogLevel {
    fn from_raw(v: i32) -> LogLevel {
        match v {
            sys::IKLLM_LOG_DEBUG => LogLevel::Debug,
            sys::IKLLM_LOG_INFO => LogLevel::Info,
            sys::IKLLM_LOG_WARN => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

type LogSink = Box<dyn Fn(LogLevel, &str) + Send + Sync>;

pub(crate) struct LibInner {
    pub(crate) raw: *mut sys::ikllm_lib,
    // Every sink ever installed stays alive until the library is freed: a worker thread may
    // still be inside the previous one when it is replaced.
    sinks: Vec<Box<LogSink>>,
}

// The C contract: an ikllm_lib may be used from any thread. Its setters take &mut Library and
// refuse once models share it, so they never race with calls that use it.
unsafe impl Send for LibInner {}
unsafe impl Sync for LibInner {}

impl Drop for LibInner {
    fn drop(&mut self) {
        unsafe { sys::ikllm_lib_free(self.raw) }
    }
}

/// A library instance: the log sink and thread defaults models and sessions use.
pub struct Library {
    pub(crate) inner: Arc<LibInner>,
}

unsafe extern "C" fn log_trampoline(user: *mut c_void, level: i32, message: *const c_char) {
    let sink = &*(user as *const LogSink);
    let text = static_str(message);
    // A panic must not unwind into C.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(LogLevel::from_raw(level), text)));
}

impl Library {
    /// Creates a library instance (no log sink). Fails with a clear message when the loaded
    /// libikllm has another ABI major than the one this binding was generated for.
    pub fn new() -> Result<Library> {
        let abi = abi_version();
        if abi != sys::IKLLM_ABI_VERSION {
            return Err(Error::new(
                Status::UNSUPPORTED,
                format!(
                    "libikllm {} has ABI major {}, this binding was generated for ABI major {}",
                    version_string(),
                    abi,
                    sys::IKLLM_ABI_VERSION
                ),
            ));
        }
        let mut raw = ptr::null_mut();
        check(unsafe { sys::ikllm_lib_create(0, &mut raw) })?;
        Ok(Library { inner: Arc::new(LibInner { raw, sinks: Vec::new() }) })
    }

    fn configurable(&mut self) -> Result<&mut LibInner> {
        Arc::get_mut(&mut self.inner).ok_or_else(|| {
            Error::new(Status::INVALID_ARGUMENT, "configure the library before loading models through it")
        })
    }

    /// Sends the library's messages at min_level or above to sink (None: logging off).
    /// The sink may be called from library worker threads.
    pub fn set_log(&mut self, sink: Option<LogSink>, min_level: LogLevel) -> Result<()> {
        let inner = self.configurable()?;
        match sink {
            None => check(unsafe { sys::ikllm_lib_set_log(inner.raw, None, ptr::null_mut(), min_level as i32) }),
            Some(s) => {
                let boxed: Box<LogSink> = Box::new(s);
                let user = &*boxed as *const LogSink as *mut c_void;
                inner.sinks.push(boxed);
                check(unsafe { sys::ikllm_lib_set_log(inner.raw, Some(log_trampoline), user, min_level as i32) })
            }
        }
    }

    /// Default worker-thread count of new sessions (0 = number of cores).
    pub fn set_default_threads(&mut self, n_threads: i32) -> Result<()> {
        let inner = self.configurable()?;
        check(unsafe { sys::ikllm_lib_set_default_threads(inner.raw, n_threads) })
    }
}

/// A flag that cancels a model load or a session's decode when set, from any thread.
#[derive(Clone, Default, Debug)]
pub struct CancelFlag(Arc<AtomicI32>);

impl CancelFlag {
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }
    pub fn cancel(&self) {
        self.0.store(1, Ordering::SeqCst)
    }
    pub fn reset(&self) {
        self.0.store(0, Ordering::SeqCst)
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }
    /// AtomicI32 has the layout of an int32_t; the library only reads it.
    pub(crate) fn as_ptr(&self) -> *const i32 {
        &*self.0 as *const AtomicI32 as *const i32
    }
}
