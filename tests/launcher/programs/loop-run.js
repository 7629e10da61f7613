// A GJS program that runs GLib's loop itself, JIT on (the default). Its
// timeout handler spins for 300 ms in JavaScript, then the loop quits.
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
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 100, () => { loop.quit(); return false; });
    return false;
}

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200, jsSlowHandler);
loop.run();
