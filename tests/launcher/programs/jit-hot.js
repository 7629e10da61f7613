// A GJS program whose freeze runs in JavaScript the engine has compiled:
// jitHot() and the timeout's handler jitHandler() are each called
// thousands of times first, so SpiderMonkey's JIT compiles them (Baseline,
// then Ion), and when GLib calls the handler neither runs in the
// interpreter: the profiling stack has no entry for them. The handler then
// calls jitHot() until 300 ms of the thread's CPU time are spent. The loop
// quits once the report is written.
const GLib = imports.gi.GLib;

const loop = new GLib.MainLoop(null, false);

// The calling thread's CPU time in µs, or null where the kernel keeps none.
function threadCpuUs() {
    try {
        const [, contents] = GLib.file_get_contents('/proc/thread-self/schedstat');
        return Number(new TextDecoder().decode(contents).split(' ')[0]) / 1000;
    } catch (e) {
        return null;
    }
}

function jitHot(n) {
    let x = 0;
    for (let i = 0; i < n; i++)
        x += Math.sqrt(i + x) % 7;
    return x;
}

// Spins in jitHot() for @ms of CPU time (of wall time where the kernel
// does not say); @ms 0 returns at once: the warm-up's calls.
function jitHandler(ms) {
    if (ms === 0)
        return jitHot(10);
    const cpuStart = threadCpuUs();
    const wallStart = GLib.get_monotonic_time();
    let x = 0;
    for (;;) {
        x += jitHot(200000);
        const cpuNow = cpuStart === null ? null : threadCpuUs();
        const spent = cpuNow === null ? GLib.get_monotonic_time() - wallStart : cpuNow - cpuStart;
        if (spent >= ms * 1000)
            return x;
    }
}

for (let i = 0; i < 20000; i++)
    jitHandler(0);

const deadline = GLib.get_monotonic_time() + 30 * 1000000;

function quitWhenReported() {
    const path = GLib.getenv('LW_TEST_REPORT_FILE');
    let written = false;
    if (path && GLib.file_test(path, GLib.FileTest.EXISTS)) {
        const [, contents] = GLib.file_get_contents(path);
        written = contents.length > 0;
    }
    if (written || GLib.get_monotonic_time() > deadline) {
        loop.quit();
        return false;
    }
    return true;
}

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200, () => {
    jitHandler(300);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, quitWhenReported);
    return false;
});
loop.run();
