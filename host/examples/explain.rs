//! What the automatic choice would pick, and why: every kernel's predicted time (layout
//! conversions included) or its reason for refusing, for a few layers on a built-in device model
//! (no GPU needed; pass a model name: h100, h200, a100, l40s, rtx4090).
//!
//! ```sh
//! cargo run -p convrs --example explain -- a100
//! ```

use std::process::ExitCode;

use convrs::{select, Conv2d, DType, DeviceModel, Layout};

fn main() -> ExitCode {
    match run(std::env::args().nth(1).as_deref().unwrap_or("h100")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("explain: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(model: &str) -> convrs::Result<()> {
    let device = DeviceModel::named(model)?;
    let layers = [
        ("speech front-end", Conv2d { stride: (2, 2), ..Conv2d::new(16, 1, 161, 700, 32, 5, 20) }, DType::F32, Layout::Nchw),
        ("ResNet-50 3x3", Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1), DType::F16, Layout::Nhwc),
        ("ResNet-50 3x3 from NCHW", Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1), DType::F16, Layout::Nchw),
        ("batch-1 6x6", Conv2d::new(1, 6, 768, 512, 6, 6, 6), DType::F32, Layout::Nchw),
    ];
    println!("on {} ({} SMs)", device.name, device.sms);
    for (name, p, dtype, layout) in layers {
        println!("\n{name}: {p}, {dtype} in {layout}");
        for c in select::candidates(&p, dtype, layout, &device) {
            match c.outcome {
                Ok(e) => println!("  {:<12} {:>10.1} us kernel + {:>8.1} us conversions = {:>10.1} us", c.kernel.name, e.kernel_us, e.conversion_us, e.total_us()),
                Err(why) => println!("  {:<12} refused: {why}", c.kernel.name),
            }
        }
        match select::choose(&p, dtype, layout, &device) {
            Ok(choice) => println!("  pick: {}", choice.pick),
            Err(e) => println!("  no pick: {e}"),
        }
    }
    Ok(())
}
