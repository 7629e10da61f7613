// A GJS program that runs GLib's loop itself, JIT on (the default). Its
// timeout handler spins for 300 ms in JavaScript (jsOtherHandler instead of
// jsSlowHandler when LW_TEST_JS_HANDLER=other); the loop quits once the
// report is written (a lag that ends just before exit may not be yet).
const GLib = imports.gi.GLib;

const loop = new GLib.MainLoop(null, false);

function jsSpinFor(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    let x = 0;
    while (GLib.get_monotonic_time() < end)
        x += Math.sqrt(x + 1);
    return x;
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
