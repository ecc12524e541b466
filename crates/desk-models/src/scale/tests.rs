//! Unit tests of the coordinate round trip and the box-filter resize.

use desk_contract::DisplaySize;

use super::{ImagePoint, ImageScale, ScreenXy, png_size, resize_png};

const FULL_HD: DisplaySize = DisplaySize::FULL_HD;

#[test]
fn full_hd_fits_into_1280_by_800_as_1280_by_720() {
    let scale = ImageScale::fit(FULL_HD, 1280, 800);
    assert_eq!(
        scale.image(),
        DisplaySize {
            width: 1280,
            height: 720
        }
    );
    assert!(!scale.is_identity());
    let center = scale.to_screen(ImagePoint { x: 640.0, y: 360.0 });
    assert_eq!(center, ScreenXy { x: 960, y: 540 });
}

#[test]
fn small_displays_are_never_upscaled() {
    let display = DisplaySize {
        width: 800,
        height: 600,
    };
    let scale = ImageScale::fit(display, 1280, 800);
    assert!(scale.is_identity());
    assert_eq!(
        scale.to_screen(ImagePoint { x: 17.4, y: 599.6 }),
        ScreenXy { x: 17, y: 600 }
    );
}

#[test]
fn every_image_pixel_round_trips_through_the_screen() {
    for (display, max_width, max_height) in [
        (FULL_HD, 1280, 800),
        (FULL_HD, 1024, 768),
        (
            DisplaySize {
                width: 2560,
                height: 1600,
            },
            1280,
            800,
        ),
        (
            DisplaySize {
                width: 1366,
                height: 768,
            },
            1000,
            1000,
        ),
    ] {
        let scale = ImageScale::fit(display, max_width, max_height);
        let image = scale.image();
        assert!(image.width <= max_width && image.height <= max_height);
        for x in 0..i64::from(image.width) {
            let screen = scale.to_screen(ImagePoint {
                x: x as f64,
                y: 0.0,
            });
            assert!(display.contains(screen.x, 0), "{x} -> {screen:?}");
            assert_eq!(scale.to_image(screen).x, x, "x={x} {display} -> {image}");
        }
        for y in 0..i64::from(image.height) {
            let screen = scale.to_screen(ImagePoint {
                x: 0.0,
                y: y as f64,
            });
            assert!(display.contains(0, screen.y));
            assert_eq!(scale.to_image(screen).y, y, "y={y} {display} -> {image}");
        }
        // Screen -> image -> screen lands within half an image pixel's footprint.
        let max_error = (f64::from(display.width) / f64::from(image.width) / 2.0).ceil() as i64;
        for x in 0..i64::from(display.width) {
            let image_point = scale.to_image(ScreenXy { x, y: 0 });
            let back = scale.to_screen(ImagePoint {
                x: image_point.x as f64,
                y: 0.0,
            });
            assert!((back.x - x).abs() <= max_error, "{x} -> {back:?}");
        }
    }
}

#[test]
fn out_of_range_points_are_mapped_but_not_clamped() {
    let scale = ImageScale::fit(FULL_HD, 1280, 800);
    assert_eq!(
        scale.to_screen(ImagePoint { x: 1280.0, y: -1.0 }),
        ScreenXy { x: 1920, y: -2 }
    );
    assert_eq!(
        scale.to_screen(ImagePoint {
            x: 5000.0,
            y: 720.0
        }),
        ScreenXy { x: 7500, y: 1080 }
    );
}

fn solid_png(width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    let mut data = Vec::new();
    for y in 0..height {
        for x in 0..width {
            data.extend_from_slice(&pixel(x, y));
        }
    }
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buffer).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgb);
    buffer.truncate(frame.buffer_size());
    (frame.width, frame.height, buffer)
}

#[test]
fn resize_averages_areas_and_keeps_regions_in_place() {
    // Left half red, right half blue, one white 3x3 block at (30..33, 30..33) on 60x40.
    let source = solid_png(60, 40, |x, y| {
        if (30..33).contains(&x) && (30..33).contains(&y) {
            [255, 255, 255, 255]
        } else if x < 30 {
            [255, 0, 0, 255]
        } else {
            [0, 0, 255, 255]
        }
    });
    let target = DisplaySize {
        width: 20,
        height: 13,
    };
    let resized = resize_png(&source, target).unwrap();
    assert_eq!(png_size(&resized).unwrap(), target);
    let (width, height, rgb) = decode(&resized);
    assert_eq!((width, height), (20, 13));
    let at = |x: usize, y: usize| &rgb[(y * 20 + x) * 3..(y * 20 + x) * 3 + 3];
    assert_eq!(at(2, 2), [255, 0, 0]);
    assert_eq!(at(17, 2), [0, 0, 255]);
    // The white block maps to image pixel (10, 10) (3x3 source pixels per image pixel, roughly).
    let white = at(10, 10);
    assert!(white[1] > 150, "white block survives averaging: {white:?}");
}

#[test]
fn same_size_png_is_returned_unchanged() {
    let source = solid_png(8, 6, |_, _| [1, 2, 3, 255]);
    let out = resize_png(
        &source,
        DisplaySize {
            width: 8,
            height: 6,
        },
    )
    .unwrap();
    assert_eq!(out, source);
}

#[test]
fn garbage_is_an_image_error() {
    let error = resize_png(
        b"not a png",
        DisplaySize {
            width: 8,
            height: 6,
        },
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("failed to read png header"),
        "{error}"
    );
}
