//! The capture+encode benchmark behind `deskbroker perf` and the `capture_bench` example: the
//! capture path the worker uses (`Capturer::capture_png`: the server copies the screen into the
//! MIT-SHM segment in two parts and the encode overlaps the second), cold (every band deflated)
//! and incremental (the unchanged bands of the previous frame reused, the product path); and its
//! two parts one after the other, on alternate frames: the X server's copy in one `ShmGetImage`
//! round trip, then the encode (conversion, filter, deflate, PNG framing and SHA-256, the hash
//! taken band by band during the encode as the product path does) of the segment. The encode's
//! process CPU time over its wall time says how well it used the cores.

use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};
use x11rb::rust_connection::RustConnection;

use super::{Capturer, encode};
use crate::error::X11Error;

/// Timing of capture+encode over several frames.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureStats {
    /// Frames measured per mode (cold, incremental).
    pub n_frames: usize,
    /// The capture path used.
    pub capture_path: &'static str,
    /// Median time of the X server's copy of the screen alone (MIT-SHM: one `ShmGetImage` round
    /// trip that fills the segment; core: `GetImage` with its reply), over the cold and
    /// incremental frames.
    pub capture_median: Duration,
    /// 95th percentile of the X server's copy.
    pub capture_p95: Duration,
    /// Median cold encode time alone (after the copy): every band deflated, PNG framed and hashed.
    pub encode_median: Duration,
    /// 95th percentile cold encode time.
    pub encode_p95: Duration,
    /// Median incremental encode time alone: unchanged bands compared and reused, PNG framed and
    /// hashed.
    pub incremental_encode_median: Duration,
    /// 95th percentile incremental encode time.
    pub incremental_encode_p95: Duration,
    /// Process CPU time over wall time during the cold encodes: 2.0 is two cores busy throughout.
    pub encode_parallelism: f64,
    /// Median capture+encode time, every band deflated (no reuse of the previous frame's).
    pub total_median: Duration,
    /// 95th percentile capture+encode time, every band deflated.
    pub total_p95: Duration,
    /// Median capture+encode time with the previous frame's unchanged bands reused (the
    /// product path), on the measured screen.
    pub incremental_median: Duration,
    /// 95th percentile capture+encode time with unchanged bands reused.
    pub incremental_p95: Duration,
    /// Bands reused in the last incremental frame, of `n_bands`.
    pub n_reused_bands: usize,
    /// Bands of a frame.
    pub n_bands: usize,
    /// Size of the last PNG.
    pub png_bytes: usize,
}

/// One frame's times: the product path's (capture+encode+hash, with the copy in two parts that
/// overlap the encode) and, on the next frame, its two parts one after the other: the server's
/// copy in one request, then the encode (with the hash) and the encode's CPU time.
struct Sample {
    total: Duration,
    copy: Duration,
    encode: Duration,
    encode_cpu: Duration,
    png_bytes: usize,
}

fn sample(
    conn: &RustConnection,
    capturer: &mut Capturer,
    incremental: bool,
) -> Result<Sample, X11Error> {
    let started = Instant::now();
    let _captured = capturer.capture_png_with(conn, incremental)?;
    let total = started.elapsed();
    let (width, height) = (u32::from(capturer.width), u32::from(capturer.height));
    let started = Instant::now();
    let shm = capturer.shm.as_ref();
    let raw = match shm {
        Some(state) => {
            capturer.shm_get(conn, state)?;
            None
        }
        None => Some(capturer.capture_core(conn)?),
    };
    let copied = Instant::now();
    let cpu_before = process_cpu();
    let pixels = match (&raw, &capturer.shm) {
        (Some(raw), _) => raw.bgrx(),
        (None, Some(state)) => state
            .mapping
            .head(capturer.n_bytes())
            .ok_or_else(|| X11Error::Shm("shm mapping too small".to_string()))?,
        (None, None) => return Err(X11Error::Capture("no frame captured".to_string())),
    };
    let png = if incremental {
        capturer
            .encode_cache
            .encode_hashed(pixels, width, height, true)?
    } else {
        encode::encode_png_hashed(pixels, width, height, true)?
    };
    let encode_cpu = process_cpu().saturating_sub(cpu_before);
    Ok(Sample {
        total,
        copy: copied - started,
        encode: copied.elapsed(),
        encode_cpu,
        png_bytes: png.bytes.len(),
    })
}

fn process_cpu() -> Duration {
    let now = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// Measures capture+encode over `n_frames` frames (at least one) in each mode.
pub(crate) fn measure_capture(
    conn: &RustConnection,
    capturer: &mut Capturer,
    n_frames: usize,
) -> Result<CaptureStats, X11Error> {
    let n_frames = n_frames.max(1);
    let cold = (0..n_frames)
        .map(|_| sample(conn, capturer, false))
        .collect::<Result<Vec<_>, _>>()?;
    // The product path: a first frame, not measured, fills the cache.
    capturer.encode_cache.clear();
    sample(conn, capturer, true)?;
    let incremental = (0..n_frames)
        .map(|_| sample(conn, capturer, true))
        .collect::<Result<Vec<_>, _>>()?;
    let total = |samples: &[Sample]| -> Vec<Duration> { samples.iter().map(|s| s.total).collect() };
    let mut copies: Vec<Duration> = cold.iter().chain(&incremental).map(|s| s.copy).collect();
    let mut encodes: Vec<Duration> = cold.iter().map(|s| s.encode).collect();
    let mut incremental_encodes: Vec<Duration> = incremental.iter().map(|s| s.encode).collect();
    let wall: Duration = encodes.iter().sum();
    let cpu: Duration = cold.iter().map(|s| s.encode_cpu).sum();
    let (mut cold_totals, mut incremental_totals) = (total(&cold), total(&incremental));
    Ok(CaptureStats {
        n_frames,
        capture_path: capturer.path_name(),
        capture_median: percentile(&mut copies, 50),
        capture_p95: percentile(&mut copies, 95),
        encode_median: percentile(&mut encodes, 50),
        encode_p95: percentile(&mut encodes, 95),
        incremental_encode_median: percentile(&mut incremental_encodes, 50),
        incremental_encode_p95: percentile(&mut incremental_encodes, 95),
        encode_parallelism: cpu.as_secs_f64() / wall.as_secs_f64().max(f64::MIN_POSITIVE),
        total_median: percentile(&mut cold_totals, 50),
        total_p95: percentile(&mut cold_totals, 95),
        incremental_median: percentile(&mut incremental_totals, 50),
        incremental_p95: percentile(&mut incremental_totals, 95),
        n_reused_bands: capturer.encode_cache.n_reused(),
        n_bands: encode::n_bands(u32::from(capturer.height)),
        png_bytes: cold.last().map_or(0, |s| s.png_bytes),
    })
}

fn percentile(samples: &mut [Duration], percent: usize) -> Duration {
    samples.sort();
    let idx = (samples.len().saturating_sub(1) * percent).div_ceil(100);
    samples.get(idx).copied().unwrap_or_default()
}
