// SPDX-License-Identifier: GPL-2.0

//! `hostile-peer`: a misbehaving iWARP peer (plain TCP client) that bends
//! the MPA exchange and the DDP/RDMAP traffic towards an rsiw listener and
//! checks the answers against the RFCs (issue 7).
//!
//!   hostile-peer --list
//!   hostile-peer --target IP:PORT --scenario NAME [--scenario NAME ...]
//!                [--timeout SECS] [--kmsg]
//!   hostile-peer --target IP:PORT --all            (KTAP)
//!   hostile-peer --target IP:PORT --mutate COUNT [--seed S]
//!   hostile-peer --listen IP:PORT --scenario init_NAME [--timeout SECS]
//!                [--accept-timeout SECS]
//!
//! With `--listen` the roles turn: rsiw is the initiator (an rdma_cm client
//! connects to us) and the `init_*` scenarios bend the MPA Reply.
//!
//! Several scenarios run one after another, 300 ms apart. With `--kmsg`
//! each one first logs `rsiw-scope: hostile NAME` to the kernel log
//! (`/dev/kmsg`, level 7), so that the test script can tell which
//! scenario a kernel report came during.

mod ext7306;
mod frames;
mod listen;
mod mutate;
mod peer;
mod scenarios;
mod stall;
mod termcheck;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use scenarios::{Ctx, Scenario, ALL};

fn usage() -> ExitCode {
    eprintln!(
        "usage: hostile-peer --list\n       hostile-peer --target IP:PORT (--scenario NAME ... | --all | --mutate COUNT [--seed S]) [--timeout SECS] [--kmsg]\n       hostile-peer --listen IP:PORT --scenario init_NAME [--timeout SECS] [--accept-timeout SECS]"
    );
    ExitCode::from(2)
}

fn run(ctx: &Ctx, s: &Scenario) -> Result<String, String> {
    (s.run)(ctx)
}

/// Logs the start of scenario `name` to the kernel log (see the module
/// documentation); a failure to do so is reported once, on stderr.
fn kmsg_scope(name: &str) {
    let r = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/kmsg")
        .and_then(|mut f| f.write_all(format!("<7>rsiw-scope: hostile {name}\n").as_bytes()));
    if let Err(e) = r {
        eprintln!("hostile-peer: cannot log to /dev/kmsg: {e}");
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut target = None;
    let mut listen_on: Option<std::net::SocketAddr> = None;
    let mut accept_t = 60u64;
    let mut names = Vec::new();
    let mut all = false;
    let mut list = false;
    let mut kmsg = false;
    let mut t = 5u64;
    let mut mutate: Option<u32> = None;
    let mut seed = 1u64;
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| args.get(i + 1).cloned();
        match args[i].as_str() {
            "--list" => list = true,
            "--all" => all = true,
            "--kmsg" => kmsg = true,
            "--target" => match val(i).and_then(|v| v.parse().ok()) {
                Some(a) => {
                    target = Some(a);
                    i += 1;
                }
                None => return usage(),
            },
            "--listen" => match val(i).and_then(|v| v.parse().ok()) {
                Some(a) => {
                    listen_on = Some(a);
                    i += 1;
                }
                None => return usage(),
            },
            "--accept-timeout" => match val(i).and_then(|v| v.parse().ok()) {
                Some(v) => {
                    accept_t = v;
                    i += 1;
                }
                None => return usage(),
            },
            "--scenario" => match val(i) {
                Some(n) => {
                    names.push(n);
                    i += 1;
                }
                None => return usage(),
            },
            "--mutate" => match val(i).and_then(|v| v.parse().ok()) {
                Some(v) => {
                    mutate = Some(v);
                    i += 1;
                }
                None => return usage(),
            },
            "--seed" => match val(i).and_then(|v| v.parse().ok()) {
                Some(v) => {
                    seed = v;
                    i += 1;
                }
                None => return usage(),
            },
            "--timeout" => match val(i).and_then(|v| v.parse().ok()) {
                Some(v) => {
                    t = v;
                    i += 1;
                }
                None => return usage(),
            },
            "-h" | "--help" => {
                usage();
                return ExitCode::SUCCESS;
            }
            _ => return usage(),
        }
        i += 1;
    }
    if list {
        for s in ALL {
            println!("{:<26} {}", s.name, s.what);
        }
        for s in listen::ALL {
            println!("{:<26} {}", s.name, s.what);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(addr) = listen_on {
        let [name] = names.as_slice() else {
            return usage();
        };
        let Some(s) = listen::find(name) else {
            eprintln!("hostile-peer: unknown initiator scenario {name:?} (see --list)");
            return ExitCode::from(2);
        };
        let ctx = listen::LCtx {
            t: Duration::from_secs(t),
        };
        return match listen::run(addr, s, &ctx, Duration::from_secs(accept_t)) {
            Ok(d) => {
                println!("# {}: {}", s.name, one_line(&d));
                println!("ok 1 {}", s.name);
                ExitCode::SUCCESS
            }
            Err(g) => {
                println!("not ok 1 {} # got {}", s.name, one_line(&g));
                ExitCode::FAILURE
            }
        };
    }
    let Some(target) = target else {
        return usage();
    };
    let ctx = Ctx {
        target,
        t: Duration::from_secs(t),
    };
    if let Some(count) = mutate {
        return match mutate::run(&ctx, count, seed) {
            Ok(d) => {
                println!("# {d}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("# mutation run failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let picked: Vec<&Scenario> = if all {
        ALL.iter().collect()
    } else {
        let mut v = Vec::new();
        for n in &names {
            match scenarios::find(n) {
                Some(s) => v.push(s),
                None => {
                    eprintln!("hostile-peer: unknown scenario {n:?} (see --list)");
                    return ExitCode::from(2);
                }
            }
        }
        v
    };
    if picked.is_empty() {
        return usage();
    }
    if all {
        println!("KTAP version 1");
        println!("1..{}", picked.len());
    }
    let mut failed = 0;
    for (n, s) in picked.iter().enumerate() {
        if n > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        if kmsg {
            kmsg_scope(s.name);
        }
        match run(&ctx, s) {
            Ok(d) => {
                println!("# {}: {}", s.name, one_line(&d));
                println!("ok {} {}", n + 1, s.name);
            }
            Err(g) => {
                failed += 1;
                println!("not ok {} {} # got {}", n + 1, s.name, one_line(&g));
            }
        }
    }
    if all {
        println!("# Totals: pass:{} fail:{}", picked.len() - failed, failed);
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
