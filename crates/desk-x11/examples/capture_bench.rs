//! Measures capture+encode (MIT-SHM GetImage, BGRX to RGB, PNG fast, SHA-256) on a 1920x1080
//! Xvfb painted with a synthetic UI-like screen (flat panels, text-like strokes, a gradient).
//!
//! `cargo run --release -p desk-x11 --example capture_bench -- [frames]`
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

fn main() {
    let n_frames: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let Some(xvfb) = desk_test_support::Xvfb::start(u32::from(WIDTH), u32::from(HEIGHT)) else {
        return;
    };
    paint(xvfb.display());
    let stats = desk_x11::bench_capture(Some(xvfb.display()), n_frames).unwrap();
    println!(
        "{}x{} via {} over {} frames: capture+encode median {:.2} ms, p95 {:.2} ms \
         (capture median {:.2} ms, encode+hash median {:.2} ms), png {} KiB",
        WIDTH,
        HEIGHT,
        stats.capture_path,
        stats.n_frames,
        stats.total_median.as_secs_f64() * 1e3,
        stats.total_p95.as_secs_f64() * 1e3,
        stats.capture_median.as_secs_f64() * 1e3,
        stats.encode_median.as_secs_f64() * 1e3,
        stats.png_bytes / 1024
    );
}
