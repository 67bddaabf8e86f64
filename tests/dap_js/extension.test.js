// editors/vscode/extension.js run against a stand-in for the `vscode` module
// (VS Code itself cannot run here): what it registers, which adapter it
// starts for which configuration, and what its commands send.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert');
const Module = require('node:module');
const path = require('node:path');

const EXTENSION = path.resolve(__dirname, '..', '..', 'editors', 'vscode', 'extension.js');

// A stand-in with just the API names extension.js uses (checked against vscode.d.ts).
function fakeVscode() {
    const reg = { factories: {}, providers: {}, commands: {}, customEventListeners: [], lines: [], messages: [] };
    const vscode = {
        reg,
        DebugAdapterExecutable: class { constructor(command, args, options) { Object.assign(this, { command, args, options }); } },
        DebugAdapterServer: class { constructor(port, host) { Object.assign(this, { port, host }); } },
        extensions: { getExtension: () => undefined },
        window: {
            activeTextEditor: undefined,
            createOutputChannel: (name) => ({ name, appendLine: (l) => reg.lines.push(l), dispose() {} }),
            showErrorMessage: (m) => reg.messages.push(m),
            showInformationMessage: (m) => reg.messages.push(m),
        },
        commands: { registerCommand: (id, fn) => { reg.commands[id] = fn; return { dispose() {} }; } },
        debug: {
            activeDebugSession: undefined,
            registerDebugAdapterDescriptorFactory: (type, f) => { reg.factories[type] = f; return { dispose() {} }; },
            registerDebugConfigurationProvider: (type, p) => { reg.providers[type] = p; return { dispose() {} }; },
            onDidReceiveDebugSessionCustomEvent: (fn) => { reg.customEventListeners.push(fn); return { dispose() {} }; },
        },
    };
    return vscode;
}

// Loads a fresh copy of extension.js with `vscode` resolved to the stand-in, and activates it.
function load(vscode) {
    const load0 = Module._load;
    Module._load = function (request, ...rest) {
        return request === 'vscode' ? vscode : load0.call(this, request, ...rest);
    };
    try {
        delete require.cache[require.resolve(EXTENSION)];
        const ext = require(EXTENSION);
        const context = { subscriptions: [] };
        ext.activate(context);
        return { ext, context };
    } finally {
        Module._load = load0;
    }
}

test('activation registers the factory, the provider and the commands for type dyndbg', () => {
    const vscode = fakeVscode();
    const { context } = load(vscode);
    assert.ok(vscode.reg.factories.dyndbg);
    assert.ok(vscode.reg.providers.dyndbg);
    assert.deepStrictEqual(Object.keys(vscode.reg.commands).sort(),
        ['dyndbg.showBytecodeView', 'dyndbg.showSourceView']);
    assert.strictEqual(vscode.reg.customEventListeners.length, 1);
    assert.ok(context.subscriptions.length >= 6);
});

test('launch runs `PYTHON -m dyndbg.dap`: the configured python, else the Python extension\'s, else python3', async () => {
    const vscode = fakeVscode();
    load(vscode);
    const factory = vscode.reg.factories.dyndbg;
    const folder = { uri: { fsPath: '/work/project' } };

    let d = await factory.createDebugAdapterDescriptor({
        configuration: { type: 'dyndbg', request: 'launch', program: 'a.py', python: '/opt/py/bin/python' },
        workspaceFolder: folder,
    });
    assert.ok(d instanceof vscode.DebugAdapterExecutable);
    assert.strictEqual(d.command, '/opt/py/bin/python');
    assert.deepStrictEqual(d.args, ['-m', 'dyndbg.dap']);
    assert.strictEqual(d.options.cwd, '/work/project');

    d = await factory.createDebugAdapterDescriptor({ configuration: { request: 'launch', program: 'a.py' } });
    assert.strictEqual(d.command, 'python3');

    // The Python extension's selected interpreter (its environments API).
    vscode.extensions.getExtension = (id) => (id !== 'ms-python.python' ? undefined : {
        isActive: true,
        exports: {
            environments: {
                getActiveEnvironmentPath: () => ({ id: 'venv', path: '/venv' }),
                resolveEnvironment: async (p) => (p.path === '/venv'
                    ? { executable: { uri: { fsPath: '/venv/bin/python' } } } : undefined),
            },
        },
    });
    d = await factory.createDebugAdapterDescriptor({ configuration: { request: 'launch', program: 'a.py' } });
    assert.strictEqual(d.command, '/venv/bin/python');
});

test('attach with connect uses the program\'s own DAP server', async () => {
    const vscode = fakeVscode();
    load(vscode);
    const d = await vscode.reg.factories.dyndbg.createDebugAdapterDescriptor({
        configuration: { type: 'dyndbg', request: 'attach', connect: { host: '127.0.0.1', port: 5678 } },
    });
    assert.ok(d instanceof vscode.DebugAdapterServer);
    assert.strictEqual(d.port, 5678);
    assert.strictEqual(d.host, '127.0.0.1');
});

test('the configuration provider fills F5 on a Python file and refuses a launch without a program', () => {
    const vscode = fakeVscode();
    load(vscode);
    const provider = vscode.reg.providers.dyndbg;
    vscode.window.activeTextEditor = { document: { languageId: 'python' } };
    const filled = provider.resolveDebugConfiguration(undefined, {});
    assert.strictEqual(filled.type, 'dyndbg');
    assert.strictEqual(filled.request, 'launch');
    assert.strictEqual(filled.program, '${file}');

    assert.strictEqual(provider.resolveDebugConfiguration(undefined, { type: 'dyndbg', request: 'launch', name: 'x' }), undefined);
    assert.match(vscode.reg.messages.pop(), /program/);
    const ok = { type: 'dyndbg', request: 'launch', name: 'x', module: 'pkg.main' };
    assert.strictEqual(provider.resolveDebugConfiguration(undefined, ok), ok);
});

test('the bytecode-view commands send dyndbg/setView; compile events go to the output channel', async () => {
    const vscode = fakeVscode();
    load(vscode);
    const sent = [];
    vscode.debug.activeDebugSession = {
        type: 'dyndbg',
        customRequest: async (command, args) => { sent.push([command, args]); return {}; },
    };
    await vscode.reg.commands['dyndbg.showBytecodeView']();
    await vscode.reg.commands['dyndbg.showSourceView']();
    assert.deepStrictEqual(sent, [['dyndbg/setView', { view: 'bytecode' }], ['dyndbg/setView', { view: 'source' }]]);

    vscode.debug.activeDebugSession = { type: 'python', customRequest: async () => assert.fail('sent to another debugger') };
    await vscode.reg.commands['dyndbg.showBytecodeView']();
    assert.match(vscode.reg.messages.pop(), /no dyndbg debug session/);

    const [listener] = vscode.reg.customEventListeners;
    listener({
        session: { type: 'dyndbg' }, event: 'dyndbg/compile',
        body: { label: 'torch_dynamo_resume_in_f_at_10 [1/0]', function: 'f', compileId: '1/0', kind: 'resume', recompile: false },
    });
    listener({ session: { type: 'python' }, event: 'dyndbg/compile', body: { label: 'other' } });
    assert.deepStrictEqual(vscode.reg.lines, ['torch_dynamo_resume_in_f_at_10 [1/0]: resume function (a graph break)']);
});
