// test-gi-api.js: lagwatch's introspected API as a GJS program meets it.
//
// The checks of test-gi-api.py, in JavaScript: a constructor that gives a
// monitor watching nothing, a setter that answers false or a property
// that ignores a bad value instead of throwing, a getter that logs a
// critical warning, a field of the report with no getter, a message that
// blames LAGWATCH_OUTPUT for the program's own configuration. Run by meson
// test through run-gi-test.sh; prints TAP. A check that needs a lag of its
// own, or stderr, runs in a child (this script with an argument).
imports.gi.versions.LagWatch = '0.1';
const {GLib, LagWatch} = imports.gi;
const System = imports.system;

const results = [];

// One TAP line, printed at once: a crash later keeps what came before.
function check(ok, name, detail = '') {
    results.push(Boolean(ok));
    print(`${ok ? 'ok' : 'not ok'} ${results.length} - ${name}`);
    if (String(detail) !== '')
        print(`# ${String(detail).replaceAll('\n', ' | ')}`);
}

// The GLib.Error call() threw, or a description of what it did.
function errorOf(call) {
    try {
        return `returned ${call()}`;
    } catch (error) {
        if (error instanceof GLib.Error)
            return error;
        return `threw ${error}`;
    }
}

function isLagwatchError(error, code) {
    return error instanceof GLib.Error && error.matches(LagWatch.error_quark(), code);
}

// Runs this script with @mode in a child with no LAGWATCH_* variable of
// ours: [exit status, stdout, stderr].
function runChild(mode) {
    const envp = GLib.get_environ().filter(entry => !entry.startsWith('LAGWATCH_'));
    const argv = [GLib.file_read_link('/proc/self/exe'), System.programPath, mode];
    const [, out, err, status] = GLib.spawn_sync(null, argv, envp, GLib.SpawnFlags.SEARCH_PATH, null);
    const decoder = new TextDecoder();
    return [status, decoder.decode(out), decoder.decode(err)];
}

// Attaches a monitor with @config to the default context, runs @freeze in
// a GLib.timeout_add callback, returns the report of that lag.
function oneLag(config, freeze) {
    const monitor = LagWatch.Monitor.new(null, config);
    const loop = new GLib.MainLoop(null, false);
    let got = null;

    monitor.connect('report', (m, report) => {
        if (report.get_duration_ms() >= 250) {
            got = report;
            loop.quit();
        }
    });
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 10, function slowCallback() {
        freeze();
        return GLib.SOURCE_REMOVE;
    });
    const deadline = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 60, () => {
        loop.quit();
        return GLib.SOURCE_REMOVE;
    });
    loop.run();
    if (got !== null)
        GLib.source_remove(deadline);
    monitor.detach();
    return got;
}

// A lag in a system call: the thread sleeps 300 ms.
function sleep300ms() {
    GLib.usleep(300 * 1000);
}

function quietConfig() {
    const config = LagWatch.Config.new();
    config.set_threshold_ms(100);
    config.set_output('none');
    return config;
}

// A report with no GTK window: window 0 is out of range.
function childFramesMissed() {
    const report = oneLag(quietConfig(), sleep300ms);
    if (report === null) {
        print('no report');
        return 1;
    }
    print(`windows ${report.get_n_windows()}, window 0: ${JSON.stringify(report.get_frames_missed(0))}`);
    return 0;
}

function childJsonPathInCode() {
    const config = LagWatch.Config.new();
    config.set_output('json:/nonexistent/lagwatch-gi-test.jsonl');
    LagWatch.Monitor.new(null, config).detach();
    return 0;
}

function sectionConstructor() {
    // A monitor exists only attached.
    const answer = errorOf(() => new LagWatch.Monitor());
    check(typeof answer === 'string' && answer.startsWith('threw') && answer.includes('abstract'),
        'new LagWatch.Monitor() throws', answer);
}

function sectionConfigSetters() {
    // Every setter of the configuration throws a GLib.Error of lagwatch's
    // domain for a value out of range.
    const config = LagWatch.Config.new();
    for (const [setter, bad] of [['set_threshold_ms', 0], ['set_hang_ms', 0], ['set_sample_ms', 5000],
        ['set_max_frames', 0], ['set_state_dir', 'relative/dir'], ['set_signal', 'SIGRTMIN+99'],
        ['set_signal', 'SIGUSR1'], ['set_output', 'bogus']]) {
        const code = setter === 'set_output' ? LagWatch.Error.OUTPUT : LagWatch.Error.INVALID;
        const answer = errorOf(() => config[setter](bad));
        check(isLagwatchError(answer, code), `Config.${setter}(${JSON.stringify(bad)}) throws GLib.Error ${code}`,
            answer);
    }
}

function sectionSignalNames() {
    // The signal by name, as LAGWATCH_SIGNAL names it.
    const config = LagWatch.Config.new();
    for (const name of ['SIGRTMIN+3', 'RTMAX-2', 'SIGRTMIN']) {
        const answer = errorOf(() => config.set_signal(name));
        check(answer === 'returned true', `Config.set_signal('${name}') accepted`, answer);
    }
}

function sectionMonitorThreshold() {
    // The monitor's threshold: a read-only property, a method that throws.
    const monitor = LagWatch.Monitor.new(null, quietConfig());
    const notified = [];
    monitor.connect('notify::threshold-ms', () => notified.push(monitor.threshold_ms));
    let answer = errorOf(() => {
        monitor.threshold_ms = 0;
        return monitor.threshold_ms;
    });
    check(String(answer).includes('not writable') && monitor.threshold_ms === 100,
        'monitor.threshold_ms = 0 throws, the threshold stays 100', answer);
    answer = errorOf(() => monitor.set_threshold_ms(0));
    check(isLagwatchError(answer, LagWatch.Error.INVALID) && monitor.threshold_ms === 100,
        'Monitor.set_threshold_ms(0) throws GLib.Error INVALID', answer);
    answer = errorOf(() => monitor.set_threshold_ms(150));
    check(answer === 'returned true' && monitor.threshold_ms === 150 && notified.join() === '150',
        'Monitor.set_threshold_ms(150) sets the property and notifies it',
        `${answer}, threshold ${monitor.threshold_ms}, notified [${notified}]`);
    monitor.detach();
    answer = errorOf(() => monitor.set_threshold_ms(150));
    check(isLagwatchError(answer, LagWatch.Error.DETACHED),
        'Monitor.set_threshold_ms() once detached throws GLib.Error DETACHED', answer);
}

function sectionReportGetters() {
    // Every field of the record has its getter, equal to the JSON's member;
    // the report is read after the ::report handler returned, as a program
    // that keeps its reports does.
    const report = oneLag(quietConfig(), sleep300ms);
    check(report !== null, 'a lag of a sleeping timeout callback is reported');
    if (report !== null) {
        const record = JSON.parse(report.to_json());
        const kind = {lag: LagWatch.ReportKind.LAG, hang: LagWatch.ReportKind.HANG}[record.event];
        const [hasPriority, priority] = report.get_priority();
        const pairs = [
            ['get_kind', report.get_kind(), kind],
            ['get_source_callback', report.get_source_callback(), record.source_callback ?? null],
            ['get_source_callback_kind', report.get_source_callback_kind(), record.source_callback_kind ?? null],
            ['get_priority', hasPriority ? priority : null, record.priority],
            ['get_occurrence', report.get_occurrence(), record.occurrence],
            ['get_wchan', report.get_wchan(), record.wchan],
        ];
        for (const [name, got, want] of pairs)
            check(got === want, `Report.${name}() is the record's value`, `${got}, record ${want}`);
        const caught = report.get_caught_ms();  // the record rounds to 0.1 ms
        check(record.caught_ms !== null && Math.abs(caught - record.caught_ms) <= 0.05,
            "Report.get_caught_ms() is the record's caught_ms", `${caught}, record ${record.caught_ms}`);
        check(hasPriority && priority === GLib.PRIORITY_DEFAULT,
            'Report.get_priority() of a GLib.timeout_add callback: [true, PRIORITY_DEFAULT]',
            `[${hasPriority}, ${priority}]`);
        check(report.get_source_callback() === 'slowCallback' && report.get_source_callback_kind() === 'g_timeout_add',
            'Report.get_source_callback() names the JavaScript callback of GLib.timeout_add',
            `${report.get_source_callback()}, ${report.get_source_callback_kind()}`);
        check(report.get_occurrence() >= 1, 'Report.get_occurrence() counts this lag', report.get_occurrence());
    }
}

function sectionFramesMissed() {
    // A window index out of range: an empty answer, no critical warning.
    const [status, out, err] = runChild('--frames-missed');
    check(status === 0 && out.includes('window 0: [0,null,0]') && !err.includes('CRITICAL'),
        'Report.get_frames_missed(0) with no window answers [0, null, 0], no critical',
        `${out}${err}`.trim().replaceAll('\n', ' | '));
}

function sectionJsonPathInCode() {
    // A JSON path given in code is not blamed on LAGWATCH_OUTPUT.
    const [status, , err] = runChild('--json-path-in-code');
    check(status === 0 && err.includes('set in code') && err.includes('/nonexistent/lagwatch-gi-test.jsonl') &&
          !err.includes('LAGWATCH_OUTPUT'),
        'a JSON path set in code that cannot be opened is named as set in code', err.trim().replaceAll('\n', ' | '));
}

// The report's last: on a library whose ::report argument was static-scope,
// reading a kept report crashed GJS.
const SECTIONS = [sectionConstructor, sectionConfigSetters, sectionSignalNames, sectionMonitorThreshold,
    sectionFramesMissed, sectionJsonPathInCode, sectionReportGetters];

function main() {
    for (const section of SECTIONS) {
        try {
            section();
        } catch (error) {  // an API that is missing fails its section only
            check(false, `${section.name} ran to its end`, error);
        }
    }
    print(`1..${results.length}`);
    return 0;
}

const modes = {'--frames-missed': childFramesMissed, '--json-path-in-code': childJsonPathInCode};
System.exit(ARGV.length > 0 ? modes[ARGV[0]]() : main());
