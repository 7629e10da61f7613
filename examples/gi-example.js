// gi-example.js: lagwatch from JavaScript (GJS), through GObject Introspection.
//
// Watches this program's main loop, freezes it once for 300 ms in a
// JavaScript function (slowHandler), prints the report it gets back on the
// main thread, then quits. Run from a build tree:
//
//   GI_TYPELIB_PATH=build/lib LD_LIBRARY_PATH=build/lib gjs examples/gi-example.js
imports.gi.versions.LagWatch = '0.1';
const {GLib, LagWatch} = imports.gi;
const System = imports.system;

const FREEZE_MS = 300;

// Stands for a handler that takes too long: 300 ms of computation.
function slowHandler() {
    const end = GLib.get_monotonic_time() + FREEZE_MS * 1000;
    let n = 0;
    while (GLib.get_monotonic_time() < end)
        n++;
    return GLib.SOURCE_REMOVE;
}

const config = LagWatch.Config.new();
config.set_threshold_ms(100);
config.set_output('none');
config.set_signal('SIGRTMIN+7');  // as LAGWATCH_SIGNAL names it
try {
    config.set_threshold_ms(0);  // every bad value throws, in LagWatch's error domain
} catch (error) {
    print(`a threshold of 0 is refused: ${error.message}`);
}
// new LagWatch.Monitor() would throw: a monitor is only made attached, or
// not at all (a GLib.Error says why).
const monitor = LagWatch.Monitor.new(null, config);
const loop = new GLib.MainLoop(null, false);
let reports = 0;

// Emitted on the thread that created the monitor: GJS's own, the only one
// that may run JavaScript.
monitor.connect('report', (m, report) => {
    reports++;
    print(`report ${report.get_id()}: ${report.get_duration_ms().toFixed(1)} ms ` +
          `(threshold ${report.get_threshold_ms()} ms), ${report.get_n_frames()} frames, ` +
          `on the loop's thread: ${GLib.MainContext.default().is_owner() ? 'yes' : 'no'}`);
    let where = null;
    for (let i = 0; i < report.get_n_frames(); i++) {
        const frame = report.get_frame_info(i);
        // language: "javascript" or "native"; is_program: the program's own
        // code, not the interpreter's or a library's.
        print(`  #${i} ${frame.symbol ?? '??'} (${frame.module} +0x${frame.module_offset.toString(16)}) ` +
              `[${frame.language}${frame.inlined ? ', inlined' : ''}${frame.is_program ? ', program' : ''}]`);
        if (where === null && frame.is_program && frame.symbol)
            where = frame.symbol;
    }
    print(`innermost program frame: ${where}`);
    // Where the loop was: the callback of an unnamed source (the function
    // given to GLib.timeout_add), the source's priority.
    const [hasPriority, priority] = report.get_priority();
    const kind = report.get_kind() === LagWatch.ReportKind.HANG ? 'hang' : 'lag';
    print(`${kind} in ${report.get_source_callback_kind()} callback ${report.get_source_callback()}, ` +
          `priority ${hasPriority ? priority : 'unknown'}, caught after ${report.get_caught_ms().toFixed(0)} ms, ` +
          `occurrence ${report.get_occurrence()}`);
    loop.quit();
});

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 10, slowHandler);
const deadline = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 60, () => {
    print('no report within 60 s');
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();
if (reports > 0)
    GLib.source_remove(deadline);
monitor.detach();
System.exit(reports > 0 ? 0 : 1);
