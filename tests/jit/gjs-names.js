// gjs-names.js: JavaScript function names in a report, attached through
// GObject Introspection (no launcher): a timeout handler spins for 300 ms
// in a JavaScript function; the report's frames are printed, one line
// each: "FRAME LANGUAGE SYMBOL FILE LINE". Lines of the two functions are
// found by the runner from their "function NAME(" lines.
imports.gi.versions.LagWatch = '0.1';
const {GLib, LagWatch} = imports.gi;

function jsSpinFor(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    let x = 0;
    while (GLib.get_monotonic_time() < end)
        x += Math.sqrt(x + 1);
    return x;
}

function jsSlowHandler() {
    jsSpinFor(300);
    return GLib.SOURCE_REMOVE;
}

const config = LagWatch.Config.new();
config.set_threshold_ms(100);
config.set_output('none');
const monitor = LagWatch.Monitor.new(null, config);
const loop = new GLib.MainLoop(null, false);

monitor.connect('report', (m, report) => {
    if (report.get_duration_ms() < 250)
        return;
    for (let i = 0; i < report.get_n_frames(); i++) {
        const frame = report.get_frame_info(i);
        print(`FRAME ${frame.language} ${frame.symbol ?? '??'} ${frame.file ?? '-'} ${frame.line}`);
    }
    print('END');
    loop.quit();
});

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 10, jsSlowHandler);
const deadline = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 60, () => {
    print('no report within 60 s');
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();
GLib.Source.remove(deadline);
monitor.detach();
