// A GJS program that runs GLib's loop itself, JIT on (the default). Its
// timeout handler spins for 300 ms of the thread's CPU time in JavaScript
// (jsOtherHandler instead of jsSlowHandler when LW_TEST_JS_HANDLER=other);
// the loop quits once the report is written (a lag that ends just before
// exit may not be yet).
const GLib = imports.gi.GLib;

const loop = new GLib.MainLoop(null, false);

// The calling thread's CPU time in µs (the kernel's scheduler statistics),
// or null where the kernel keeps none.
function threadCpuUs() {
    try {
        const [, contents] = GLib.file_get_contents('/proc/thread-self/schedstat');
        return Number(new TextDecoder().decode(contents).split(' ')[0]) / 1000;
    } catch (e) {
        return null;
    }
}

// Spins for @ms of the thread's CPU time (of wall time where the kernel
// does not say): the same work, and so about as many samples (a running
// thread is sampled per 10 ms of its CPU time), however loaded the machine
// is. A wall-clock spin on a starved thread gets a few samples, each a
// stack of its own, and which one is the lag's heaviest is then chance.
// The CPU time is read once per millisecond of wall time, so the spin's
// samples land in its own loop, not in the read.
function jsSpinFor(ms) {
    const cpuStart = threadCpuUs();
    const wallStart = GLib.get_monotonic_time();
    let nextLook = wallStart;
    let x = 0;
    for (;;) {
        const now = GLib.get_monotonic_time();
        if (now >= nextLook) {
            const cpuNow = cpuStart === null ? null : threadCpuUs();
            const spent = cpuNow === null ? now - wallStart : cpuNow - cpuStart;
            if (spent >= ms * 1000)
                return x;
            nextLook = now + 1000;
        }
        x += Math.sqrt(x + 1);
    }
}

function jsSlowHandler() {
    jsSpinFor(300);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, quitWhenReported);
    return false;
}

function jsOtherHandler() {
    jsSpinFor(300);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, quitWhenReported);
    return false;
}

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

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200,
    GLib.getenv('LW_TEST_JS_HANDLER') === 'other' ? jsOtherHandler : jsSlowHandler);
loop.run();
