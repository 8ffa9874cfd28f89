//! Operating-system look-ups: which module holds an address (for call
//! sites), and the clocks the tracer times calls with.

use std::ffi::CStr;
use std::sync::OnceLock;

/// A loaded module (executable or shared library) holding an address.
pub(crate) struct Module {
    /// File name without directories, so that the same program started by a
    /// different path gives the same signature.
    pub name: String,
    /// Load address; offsets are taken from here.
    pub base: usize,
    /// Whether this is the tracer's own library.
    pub is_self: bool,
}

fn self_base() -> usize {
    static BASE: OnceLock<usize> = OnceLock::new();
    *BASE.get_or_init(|| {
        let probe = self_base as *const fn() as usize;
        raw_module(probe).map_or(0, |(_, base)| base)
    })
}

fn raw_module(addr: usize) -> Option<(String, usize)> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and writes `info`, which
    // is a valid, exclusively borrowed Dl_info. Any address may be asked.
    let ok = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    if ok == 0 || info.dli_fbase.is_null() {
        return None;
    }
    let name = if info.dli_fname.is_null() {
        String::new()
    } else {
        // SAFETY: dladdr succeeded and dli_fname is non-null, so it points to
        // a NUL-terminated path owned by the loader for the module's lifetime.
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned()
    };
    let base_name = name.rsplit('/').next().unwrap_or("").to_string();
    Some((base_name, info.dli_fbase as usize))
}

/// The module containing `addr`, if the loader knows it.
pub(crate) fn module_of(addr: usize) -> Option<Module> {
    let (name, base) = raw_module(addr)?;
    Some(Module {
        is_self: base == self_base(),
        name,
        base,
    })
}

/// Reads the return address of the function this macro is expanded in.
///
/// The shim is built with frame pointers (see `.cargo/config.toml`), so the
/// return address sits next to the saved frame pointer. This costs about 2 ns
/// where an unwind costs about 100 ns per frame. On targets without this fast
/// path it yields 0, and the signature falls back to a real unwind.
#[macro_export]
#[doc(hidden)]
macro_rules! return_address {
    () => {{
        #[allow(unused_mut)]
        let mut ra: usize = 0;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: with frame pointers, rbp points at the saved rbp of this
        // frame and [rbp+8] holds this function's return address; the read
        // stays inside this function's own frame.
        unsafe {
            core::arch::asm!("mov {}, [rbp + 8]", out(reg) ra, options(nostack, readonly, preserves_flags));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: with frame pointers, x29 points at the frame record whose
        // second word is the saved link register (the return address).
        unsafe {
            core::arch::asm!("ldr {}, [x29, #8]", out(reg) ra, options(nostack, readonly, preserves_flags));
        }
        ra
    }};
}

/// Where the module holding `addr` lives on disk and its load bias (run-time
/// address minus the address the ELF file gives), for looking the address
/// up in the module's debug information. The main program, which the loader
/// lists without a name, is `/proc/self/exe`.
pub(crate) fn object_file(addr: usize) -> Option<(std::path::PathBuf, usize)> {
    struct Probe {
        addr: usize,
        found: Option<(std::path::PathBuf, usize)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid `dl_phdr_info` for the
        // duration of this call, whose `dlpi_phdr` points at `dlpi_phnum`
        // program headers, and `data` is the `Probe` that `object_file`
        // handed it, exclusively borrowed for the iteration.
        unsafe {
            let info = &*info;
            let probe = &mut *data.cast::<Probe>();
            let bias = info.dlpi_addr as usize;
            let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            let inside = phdrs.iter().any(|p| {
                let start = bias.wrapping_add(p.p_vaddr as usize);
                p.p_type == libc::PT_LOAD
                    && probe.addr >= start
                    && probe.addr - start < p.p_memsz as usize
            });
            if !inside {
                return 0;
            }
            let name = if info.dlpi_name.is_null() {
                &[][..]
            } else {
                CStr::from_ptr(info.dlpi_name).to_bytes()
            };
            let path = if name.is_empty() {
                std::path::PathBuf::from("/proc/self/exe")
            } else {
                use std::os::unix::ffi::OsStrExt;
                std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name))
            };
            probe.found = Some((path, bias));
            1
        }
    }
    let mut probe = Probe { addr, found: None };
    // SAFETY: `visit` only reads the loader's entries and writes `probe`,
    // which outlives the call; the loader holds its lock meanwhile, so the
    // entries stay valid.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut probe).cast()) };
    probe.found
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `std::time::Instant` reads,
/// without its `Duration` arithmetic. The tracer reads it twice per call, so
/// the difference (about 50 instructions per read) is part of the cost per
/// event.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`, a valid,
    // exclusively borrowed value; CLOCK_MONOTONIC is always available on
    // Linux, and on a failure `ts` stays zero.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// `CLOCK_MONOTONIC` and the wall clock (ns since the Unix epoch) at one
/// instant: the tracer's time zero and the timeline's epoch, which places
/// every rank's times on the wall clock. Read together, the best of a few
/// tries (the pair whose monotonic reads are closest), so that a rank
/// preempted between the two reads does not carry that delay as a clock
/// offset: read apart, at `MPI_Init`, they put oversubscribed ranks tens of
/// microseconds apart and a fifth of NPB CG's receives before their sends.
pub(crate) fn clock_pair() -> (u64, u64) {
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(0))
    };
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let m0 = monotonic_ns();
        let w = wall();
        let m1 = monotonic_ns();
        let gap = m1.saturating_sub(m0);
        if gap < best.0 {
            best = (gap, m0 + gap / 2, w);
        }
        if gap < 200 {
            break;
        }
    }
    (best.1, best.2)
}
