//! `strstress`: random STREAMS system calls from many processes and threads at once, in the
//! test guest (docs/stress.md).
//!
//! The orchestrator forks `-p` worker processes (every other one drops to uid 65534 when run
//! as root), each running `-t` threads of random operations on a shared table of open
//! Streams (`ops.rs`: open of every device under `/dev/streams` and `/dev/udp`, STREAMS
//! pipes, loop-around pairs, close, dup, read/write/putmsg/getmsg of random sizes, bands and
//! priorities, the I_* ioctls, I_PUSH/I_POP of every module, I_STR, I_SENDFD/I_RECVFD,
//! I_LINK/I_PLINK/I_UNLINK/I_PUNLINK, fattach/fdetach, poll, fork, signals, O_NONBLOCK) and
//! two threads of sequence-checked traffic (`seq.rs`); a watchdog thread interrupts calls
//! that sleep. The orchestrator SIGKILLs a random worker every `--kill-ms` and starts a new
//! one, until the workers have made `-n` system calls in all. Then it stops them, detaches
//! what is still attached, unlinks persistent links, and prints a summary.
//!
//! Errors from the kernel are expected (each call has its errno set); the run fails on an
//! errno outside the set, a sequence-check failure, a worker that does not stop (a hang) or
//! a run without progress. Kernel reports (KASAN, lockdep, WARN…) are judged by the caller
//! from the console (`cargo xtask test`/`stress`). The seed fixes every thread's sequence
//! of choices; the interleaving of threads and processes is not reproducible.

use std::fs;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Parser;

mod devices;
mod ops;
mod seq;
mod shared;
mod sys;
mod table;
mod worker;

use shared::{total, Shared, MAX_WORKERS};

/// Random STREAMS system calls from many processes and threads (the test guest's stress).
#[derive(Debug, Parser)]
#[command(name = "strstress")]
struct Args {
    /// System calls to make in all (the run stops when the workers have made this many)
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    ops: u64,
    /// Worker processes
    #[arg(short = 'p', long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=MAX_WORKERS as u64))]
    procs: u64,
    /// Random-operation threads per worker (plus two of sequence-checked traffic)
    #[arg(short = 't', long, default_value_t = 3)]
    threads: usize,
    /// Seed of every random choice
    #[arg(short = 's', long, default_value_t = 1)]
    seed: u64,
    /// Open Streams per worker (its table's slots)
    #[arg(long, default_value_t = 32)]
    slots: usize,
    /// Largest read/write/putmsg/getmsg data size in bytes
    #[arg(long, default_value_t = 262_144)]
    max_size: usize,
    /// SIGKILL a random worker this often, in milliseconds (0: never)
    #[arg(long, default_value_t = 2000)]
    kill_ms: u64,
    /// Keep every worker's credentials (default: every other worker drops to uid 65534)
    #[arg(long)]
    no_unprivileged: bool,
    /// No sequence-checked traffic
    #[arg(long)]
    no_seq: bool,
    /// Fail if the run has not finished after this many seconds (0: no limit)
    #[arg(long, default_value_t = 0)]
    max_secs: u64,
    /// A hang: no system call completed for this many seconds
    #[arg(long, default_value_t = 60)]
    stall_secs: u64,
    /// Operations not to make (comma-separated names: open, pipe, loop_pair, close, dup,
    /// write, read, putmsg, getmsg, ioctl, push, pop, istr, sendfd, recvfd, link, unlink,
    /// fattach, fdetach, poll, fork, signal, nonblock, fdinsert, peek)
    #[arg(long, value_delimiter = ',', value_name = "OPS")]
    skip: Vec<String>,
    /// Modules not to push (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "MODULES")]
    skip_modules: Vec<String>,
    /// Allocation failures are being injected (tests/vm/fault.sh): EFAULT is then expected
    /// from any call, because the kernel fails the page fault of a valid user buffer when
    /// the page allocation it needs is failed under our modules' frames
    #[arg(long)]
    faults: bool,
    /// Directory of the files Streams are attached to
    #[arg(long, default_value = "/tmp/strstress")]
    dir: String,
}

/// SplitMix64: a worker's seed from the run's seed, its slot and its generation.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Run {
    args: Args,
    sh: &'static Shared,
    devices: Vec<devices::Device>,
    modules: Vec<String>,
    attach: Vec<String>,
    /// Per slot: the live worker's pid (0: none) and its generation.
    pids: Vec<i32>,
    gens: Vec<u64>,
    killed: Vec<i32>,
    /// Every worker's process group (its pid), live or killed.
    groups: Vec<i32>,
    problems: Vec<String>,
    kills: u64,
    respawns: u64,
}

impl Run {
    fn spawn(&mut self, slot: usize) {
        let gen = self.gens[slot];
        self.gens[slot] += 1;
        let root = unsafe_geteuid() == 0;
        let p = worker::Params {
            worker: slot,
            seed: mix(self.args.seed ^ mix(slot as u64) ^ mix(gen << 32)),
            threads: self.args.threads,
            slots: self.args.slots.max(1),
            max_size: self.args.max_size.max(64),
            unprivileged: root && !self.args.no_unprivileged && slot % 2 == 1,
            seq: !self.args.no_seq,
            ops: (0..ops::OPS.len())
                .filter(|&i| !self.args.skip.iter().any(|n| n == ops::OPS[i].1))
                .collect(),
        };
        let _ = std::io::stderr().flush();
        let _ = std::io::stdout().flush();
        // SAFETY: the orchestrator is single-threaded, so the child may run any code.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // A process group per worker: killing it kills the children it forked too.
            // SAFETY: setpgid on ourselves.
            unsafe { libc::setpgid(0, 0) };
            let code = worker::run(
                self.sh,
                &p,
                self.devices.clone(),
                self.modules.clone(),
                self.attach.clone(),
            );
            let _ = std::io::stderr().flush();
            // SAFETY: end the worker without the orchestrator's exit handlers.
            unsafe { libc::_exit(code) };
        }
        if pid < 0 {
            self.problems
                .push(format!("fork: {}", std::io::Error::last_os_error()));
            return;
        }
        // SAFETY: setpgid on our child (also done by the child: whichever runs first).
        unsafe { libc::setpgid(pid, pid) };
        self.pids[slot] = pid;
        self.groups.push(pid);
    }

    /// Reap every ended child; restart killed workers unless stopping.
    fn reap(&mut self, stopping: bool) {
        while let Ok(Some((pid, how))) = sys::wait(-1, true) {
            let Some(slot) = self.pids.iter().position(|p| *p == pid) else {
                continue; // an orphaned child of a killed worker
            };
            self.pids[slot] = 0;
            let ours = self.killed.contains(&pid);
            self.killed.retain(|p| *p != pid);
            match how {
                sys::Exit::Signaled(libc::SIGKILL) if ours => {}
                sys::Exit::Exited(0) if stopping => {}
                other => self
                    .problems
                    .push(format!("worker {slot} (pid {pid}) ended: {other:?}")),
            }
            if !stopping {
                self.respawns += 1;
                self.spawn(slot);
            }
        }
    }

    fn live(&self) -> Vec<i32> {
        self.pids.iter().copied().filter(|p| *p != 0).collect()
    }
}

fn unsafe_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Print where every thread of `pids` sleeps (for a hang report).
fn dump_stacks(pids: &[i32]) {
    for pid in pids {
        let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in rd.flatten() {
            let tid = t.file_name().to_string_lossy().into_owned();
            let base = format!("/proc/{pid}/task/{tid}");
            let wchan = fs::read_to_string(format!("{base}/wchan")).unwrap_or_default();
            let stat = fs::read_to_string(format!("{base}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            eprintln!(
                "strstress: pid {pid} thread {tid} state {} wchan {wchan}",
                state.unwrap_or("?")
            );
            for l in fs::read_to_string(format!("{base}/stack"))
                .unwrap_or_default()
                .lines()
            {
                eprintln!("strstress:     {l}");
            }
        }
    }
}

/// Undo what killed workers left: attachments and persistent links.
fn cleanup(run: &Run) {
    for p in &run.attach {
        while streams::fdetach(p).is_ok() {}
        let _ = fs::remove_file(p);
    }
    for d in run
        .devices
        .iter()
        .filter(|d| d.kind == devices::DevKind::Mux)
    {
        if let Ok(fd) = sys::open(&d.path, libc::O_RDWR) {
            use std::os::fd::AsRawFd;
            if let Err(e) = sys::ioctl_int(fd.as_raw_fd(), streams::I_PUNLINK, streams::MUXID_ALL) {
                eprintln!("strstress: I_PUNLINK MUXID_ALL on {}: {e}", d.path);
            }
        }
    }
    let _ = fs::remove_dir(&run.args.dir);
}

fn main() {
    let args = Args::parse();
    worker::FAULTS.store(args.faults, Ordering::Relaxed);
    std::process::exit(match orchestrate(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("strstress: FAIL: {e}");
            1
        }
    });
}

fn orchestrate(args: Args) -> Result<(), String> {
    let sh: &'static Shared = sys::shared::<Shared>().map_err(|e| format!("mmap: {e}"))?;
    sys::become_subreaper().map_err(|e| format!("PR_SET_CHILD_SUBREAPER: {e}"))?;
    let devices = devices::devices();
    if devices.is_empty() {
        return Err("no STREAMS device under /dev/streams (is streams.ko loaded?)".into());
    }
    for n in &args.skip {
        if !ops::OPS.iter().any(|o| o.1 == n) {
            return Err(format!("--skip: no operation {n:?}"));
        }
    }
    let modules: Vec<String> = devices::modules()
        .into_iter()
        .filter(|m| !args.skip_modules.contains(m))
        .collect();
    let _ = fs::create_dir_all(&args.dir);
    let attach = devices::attach_paths(&args.dir, 8);
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&args.dir, fs::Permissions::from_mode(0o1777));
        for p in &attach {
            fs::write(p, b"").map_err(|e| format!("{p}: {e}"))?;
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o666));
        }
    }
    let procs = args.procs as usize;
    println!(
        "strstress: seed {} target {} calls, {} workers x {} threads (+2 sequence-checked), {} devices ({}), modules {}",
        args.seed,
        args.ops,
        procs,
        args.threads,
        devices.len(),
        devices.iter().map(|d| d.path.rsplit('/').next().unwrap_or("")).collect::<Vec<_>>().join(" "),
        modules.join(" ")
    );
    let mut run = Run {
        sh,
        devices,
        modules,
        attach,
        pids: vec![0; procs],
        gens: vec![0; procs],
        killed: Vec::new(),
        groups: Vec::new(),
        problems: Vec::new(),
        kills: 0,
        respawns: 0,
        args,
    };
    let t0 = Instant::now();
    for slot in 0..procs {
        run.spawn(slot);
    }
    let mut rng = fastrand::Rng::with_seed(mix(run.args.seed ^ 0x5eed));
    let (mut last_kill, mut last_print) = (Instant::now(), Instant::now());
    let (mut last_ops, mut last_progress) = (0, Instant::now());
    loop {
        std::thread::sleep(Duration::from_millis(50));
        run.reap(false);
        let ops = total(sh, |s| &s.ops);
        if ops >= run.args.ops {
            break;
        }
        if ops != last_ops {
            (last_ops, last_progress) = (ops, Instant::now());
        } else if last_progress.elapsed() > Duration::from_secs(run.args.stall_secs) {
            run.problems.push(format!(
                "hang: no system call completed in {} s (at {ops} calls)",
                run.args.stall_secs
            ));
            dump_stacks(&run.live());
            break;
        }
        if run.args.max_secs > 0 && t0.elapsed() > Duration::from_secs(run.args.max_secs) {
            run.problems.push(format!(
                "time limit: {ops} of {} calls after {} s",
                run.args.ops, run.args.max_secs
            ));
            break;
        }
        if run.args.kill_ms > 0 && last_kill.elapsed() > Duration::from_millis(run.args.kill_ms) {
            last_kill = Instant::now();
            let slot = rng.usize(..procs);
            let pid = run.pids[slot];
            if pid != 0 && sys::kill(-pid, libc::SIGKILL).is_ok() {
                run.killed.push(pid);
                run.kills += 1;
            }
        }
        if last_print.elapsed() > Duration::from_secs(10) {
            last_print = Instant::now();
            let secs = t0.elapsed().as_secs_f64();
            println!(
                "strstress: {:.0} s: {ops} calls ({:.0}/s), {} sequence-checked messages",
                secs,
                ops as f64 / secs,
                total(sh, |s| &s.seq_msgs)
            );
        }
    }
    // Stop: workers finish their calls (the watchdogs interrupt sleeping ones) and exit.
    sh.stop.store(true, Ordering::SeqCst);
    let stop_t = Instant::now();
    while !run.live().is_empty() && stop_t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
        run.reap(true);
    }
    let secs = t0.elapsed().as_secs_f64();
    let left = run.live();
    if !left.is_empty() {
        run.problems.push(format!(
            "hang: {} worker(s) did not stop within 60 s",
            left.len()
        ));
        dump_stacks(&left);
        for p in &left {
            let _ = sys::kill(*p, libc::SIGKILL);
            run.killed.push(*p);
        }
        let t = Instant::now();
        while !run.live().is_empty() && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
            run.reap(true);
        }
        if !run.live().is_empty() {
            run.problems
                .push("hang: worker(s) not gone 30 s after SIGKILL".to_string());
        }
    }
    // Forked children left by killed workers (asleep in a blocking call, with no parent to
    // kill them) die with their worker's process group.
    for g in &run.groups {
        let _ = sys::kill(-*g, libc::SIGKILL);
    }
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        match sys::wait(-1, true) {
            Ok(Some(_)) => {}
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break, // ECHILD: none left
        }
    }
    cleanup(&run);
    let ops = total(sh, |s| &s.ops);
    let unexpected = total(sh, |s| &s.unexpected);
    let seq_fail = total(sh, |s| &s.seq_failures);
    println!(
        "strstress: {ops} calls in {secs:.1} s ({:.0}/s); {} expected errors, {unexpected} unexpected; \
         sequence check: {} messages in {} rounds, {seq_fail} failures; {} forks, {} workers killed, \
         {} SIGPOLLs",
        ops as f64 / secs,
        total(sh, |s| &s.expected_errors),
        total(sh, |s| &s.seq_msgs),
        total(sh, |s| &s.seq_rounds),
        total(sh, |s| &s.forks),
        run.kills,
        total(sh, |s| &s.sigpolls),
    );
    let _ = run.respawns;
    if unexpected > 0 {
        run.problems.push(format!(
            "{unexpected} unexpected result(s) (first ones above), {seq_fail} of them sequence-check failures"
        ));
    }
    if ops < run.args.ops && run.problems.is_empty() {
        run.problems
            .push(format!("only {ops} of {} calls made", run.args.ops));
    }
    if run.problems.is_empty() {
        println!("strstress: PASS");
        Ok(())
    } else {
        Err(run.problems.join("; "))
    }
}
