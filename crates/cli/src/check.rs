//! `tempora check` and `tempora repair` (docs/server.md, "Damaged data directories"): run
//! with the server stopped. Check exits 0 when nothing blocks a start or loses data, 1 when
//! damage is found, 2 when it could not run; repair exits 0 when it finished.

use clap::Args;

use crate::ServerFlags;

#[derive(Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    flags: ServerFlags,
}

/// Checks the data directory and exits with the verdict.
pub fn check(args: CheckArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = args.flags.load()?;
    let report = match tempora_server::check::check_data_dir(&config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    if report.damaged() {
        eprintln!(
            "damage found: `tempora repair --data-dir {}` keeps every readable row and sets the damaged files aside",
            config.data_dir.display()
        );
        std::process::exit(1);
    }
    Ok(())
}

/// Repairs the data directory and prints what it did and lost.
pub fn repair(args: CheckArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = args.flags.load()?;
    let (report, quarantine) = tempora_server::check::repair_data_dir(&config)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    if quarantine.exists() {
        eprintln!(
            "damaged files and the report (report.json, report.txt) are in {}",
            quarantine.display()
        );
    }
    Ok(())
}
