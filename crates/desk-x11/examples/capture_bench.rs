//! Measures capture+encode (MIT-SHM GetImage, BGRX to RGB, PNG fast, SHA-256) on a 1920x1080
//! Xvfb painted with a synthetic UI-like screen (flat panels, text-like strokes, a gradient).
//!
//! `cargo run --release -p desk-x11 --example capture_bench -- [frames] [--display :N]`; with
//! `--display` it measures that running display as it is (say, LibreCAD's) instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, CreateGCAux, ImageFormat};

const WIDTH: u16 = 1920;
const HEIGHT: u16 = 1080;

fn pixel(x: u32, y: u32, seed: &mut u32) -> [u8; 4] {
    *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    let noise = (*seed >> 24) as u8;
    let (r, g, b) = if y < 90 {
        (0xe8, 0xe8, 0xea) // ribbon
    } else if x < 260 {
        (0xf5, 0xf5, 0xf5) // side panel
    } else if x > 1500 && y > 600 {
        ((x / 2) as u8, (y / 3) as u8, noise / 4 + 100) // image-like gradient
    } else {
        (0x20, 0x22, 0x28) // canvas
    };
    // Text-like strokes: short dark runs on 14-px lines in the ribbon and panel.
    let in_text = (y < 90 || x < 260) && y % 14 < 9 && (x / 3 + y) % 11 < 6 && noise > 90;
    if in_text {
        [0x20, 0x20, 0x20, 0]
    } else {
        [b, g, r, 0]
    }
}

fn paint(display: &str) {
    let (conn, screen_idx) = x11rb::connect(Some(display)).unwrap();
    let screen = &conn.setup().roots[screen_idx];
    let gc = conn.generate_id().unwrap();
    conn.create_gc(gc, screen.root, &CreateGCAux::new())
        .unwrap();
    let mut seed = 7u32;
    let rows_per_strip = 32u16;
    for strip in 0..HEIGHT / rows_per_strip + 1 {
        let y0 = strip * rows_per_strip;
        let rows = rows_per_strip.min(HEIGHT.saturating_sub(y0));
        if rows == 0 {
            break;
        }
        let mut data = Vec::with_capacity(usize::from(WIDTH) * usize::from(rows) * 4);
        for y in y0..y0 + rows {
            for x in 0..WIDTH {
                data.extend_from_slice(&pixel(u32::from(x), u32::from(y), &mut seed));
            }
        }
        conn.put_image(
            ImageFormat::Z_PIXMAP,
            screen.root,
            gc,
            WIDTH,
            rows,
            0,
            y0 as i16,
            0,
            24,
            &data,
        )
        .unwrap();
    }
    conn.flush().unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    // Keep the painting: the root window keeps its contents only while no one repaints it.
    std::mem::forget(conn);
}

/// Writes the root window of `display` as raw BGRX (1920x1080) to `path`.
fn dump(display: &str, path: &str) {
    let (conn, screen_idx) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen_idx].root;
    let image = conn
        .get_image(ImageFormat::Z_PIXMAP, root, 0, 0, WIDTH, HEIGHT, u32::MAX)
        .unwrap()
        .reply()
        .unwrap();
    std::fs::write(path, &image.data).unwrap();
}

/// Encodes a raw BGRX dump (1920x1080) `n_frames` times: encode wall and CPU time, no X.
fn encode_raw(path: &str, n_frames: usize) {
    let pixels = std::fs::read(path).unwrap();
    let frame = desk_x11::RawFrame::from_bgrx(u32::from(WIDTH), u32::from(HEIGHT), pixels).unwrap();
    // `--count` leaves the clocks alone (rustix's vDSO lookup fails under valgrind), for counting
    // instructions with `valgrind --tool=callgrind`.
    let count_only = std::env::args().any(|arg| arg == "--count");
    let cpu = || {
        if count_only {
            return 0.0;
        }
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
    };
    let mut walls = Vec::new();
    let (mut cpu_total, mut png_bytes) = (0.0, 0);
    for _ in 0..n_frames {
        let (started, cpu_started) = (std::time::Instant::now(), cpu());
        let png = frame.encode_png().unwrap();
        walls.push(started.elapsed().as_secs_f64() * 1e3);
        cpu_total += cpu() - cpu_started;
        png_bytes = png.len();
    }
    walls.sort_by(f64::total_cmp);
    println!(
        "{path}: encode median {:.3} ms, min {:.3} ms, cpu {:.3} ms/frame, png {png_bytes} bytes",
        walls[walls.len() / 2],
        walls[0],
        cpu_total / n_frames as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n_frames: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(100);
    // `--display :N` measures a display that is already running (say, LibreCAD's) as it is.
    let display = args
        .iter()
        .position(|arg| arg == "--display")
        .and_then(|idx| args.get(idx + 1));
    let flag = |name: &str| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|idx| args.get(idx + 1))
    };
    if let Some(path) = flag("--raw") {
        encode_raw(path, n_frames);
        return;
    }
    if let (Some(display), Some(path)) = (display, flag("--dump")) {
        dump(display, path);
        return;
    }
    let xvfb;
    let display = match display {
        Some(display) => display.as_str(),
        None => {
            let Some(started) = desk_test_support::Xvfb::start(u32::from(WIDTH), u32::from(HEIGHT))
            else {
                return;
            };
            xvfb = started;
            paint(xvfb.display());
            xvfb.display()
        }
    };
    let stats = desk_x11::bench_capture(Some(display), n_frames).unwrap();
    let ms = |duration: std::time::Duration| duration.as_secs_f64() * 1e3;
    println!(
        "{display} via {} over {} frames: cold capture+encode median {:.2} ms, p95 {:.2} ms \
         (server copy {:.2} ms, encode+hash {:.2} ms on {:.2} cores); incremental ({}/{} bands \
         reused) median {:.2} ms, p95 {:.2} ms (encode+hash {:.2} ms); png {} bytes",
        stats.capture_path,
        stats.n_frames,
        ms(stats.total_median),
        ms(stats.total_p95),
        ms(stats.capture_median),
        ms(stats.encode_median),
        stats.encode_parallelism,
        stats.n_reused_bands,
        stats.n_bands,
        ms(stats.incremental_median),
        ms(stats.incremental_p95),
        ms(stats.incremental_encode_median),
        stats.png_bytes
    );
}
