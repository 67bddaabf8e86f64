// dyndbg's VS Code extension: starts `python -m dyndbg.dap` (or connects to a
// `python -m dyndbg --listen` server) for debug configurations of type
// "dyndbg", and adds the bytecode-view commands and the compile log.
// Plain JavaScript so that it needs no build step.
'use strict';

const vscode = require('vscode');

const TYPE = 'dyndbg';

// The interpreter that runs the adapter: the configuration's `python`, else
// the Python extension's selected one, else python3 on PATH.
async function interpreter(session) {
    const config = session.configuration;
    if (typeof config.python === 'string' && config.python) {
        return config.python;
    }
    const resource = session.workspaceFolder ? session.workspaceFolder.uri : undefined;
    try {
        const ext = vscode.extensions.getExtension('ms-python.python');
        if (ext) {
            const api = ext.isActive ? ext.exports : await ext.activate();
            if (api && api.environments) {
                const env = await api.environments.resolveEnvironment(
                    api.environments.getActiveEnvironmentPath(resource));
                if (env && env.executable && env.executable.uri) {
                    return env.executable.uri.fsPath;
                }
            }
            if (api && api.settings) {
                // Older releases of the Python extension; a command with
                // arguments (`conda run ...`) is no interpreter path.
                const cmd = api.settings.getExecutionDetails(resource).execCommand;
                if (cmd && cmd.length === 1) {
                    return cmd[0];
                }
            }
        }
    } catch (err) {
        // The Python extension is optional: fall back to python3.
    }
    return 'python3';
}

class AdapterFactory {
    async createDebugAdapterDescriptor(session) {
        const config = session.configuration;
        if (config.request === 'attach' && config.connect) {
            // The program serves DAP itself (python -m dyndbg --listen).
            return new vscode.DebugAdapterServer(
                Number(config.connect.port), config.connect.host || '127.0.0.1');
        }
        const options = {};
        if (session.workspaceFolder) {
            // So that `-m dyndbg.dap` also finds a dyndbg checkout opened as the workspace.
            options.cwd = session.workspaceFolder.uri.fsPath;
        }
        return new vscode.DebugAdapterExecutable(
            await interpreter(session), ['-m', 'dyndbg.dap'], options);
    }
}

class ConfigurationProvider {
    // F5 without a launch.json: launch the current Python file.
    resolveDebugConfiguration(folder, config) {
        if (!config.type && !config.request && !config.name) {
            const editor = vscode.window.activeTextEditor;
            if (editor && editor.document.languageId === 'python') {
                return {
                    type: TYPE, request: 'launch', name: 'dyndbg: current file',
                    program: '${file}', stopOnEntry: true,
                };
            }
        }
        if (config.request === 'launch' && !config.program && !config.module) {
            vscode.window.showErrorMessage("dyndbg: a launch configuration needs 'program' or 'module'.");
            return undefined;   // does not start the session
        }
        if (config.request === 'attach' && !(config.connect && config.connect.port)) {
            vscode.window.showErrorMessage("dyndbg: an attach configuration needs 'connect': {host, port}.");
            return undefined;
        }
        return config;
    }
}

// Sends dyndbg/setView to the active dyndbg session.
async function setView(view) {
    const session = vscode.debug.activeDebugSession;
    if (!session || session.type !== TYPE) {
        vscode.window.showInformationMessage('dyndbg: no dyndbg debug session is active.');
        return;
    }
    try {
        await session.customRequest('dyndbg/setView', { view });
    } catch (err) {
        vscode.window.showErrorMessage(`dyndbg: ${err && err.message ? err.message : err}`);
    }
}

function describeCompile(body) {
    const b = body || {};
    const what = b.kind === 'resume' ? 'resume function (a graph break)' : 'transformed code';
    const again = b.recompile ? ', recompiled' : '';
    return `${b.label || b.function || '?'}: ${what}${again}`;
}

function activate(context) {
    const log = vscode.window.createOutputChannel('dyndbg');
    context.subscriptions.push(
        log,
        vscode.debug.registerDebugAdapterDescriptorFactory(TYPE, new AdapterFactory()),
        vscode.debug.registerDebugConfigurationProvider(TYPE, new ConfigurationProvider()),
        vscode.commands.registerCommand('dyndbg.showBytecodeView', () => setView('bytecode')),
        vscode.commands.registerCommand('dyndbg.showSourceView', () => setView('source')),
        vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
            if (e.session.type === TYPE && e.event === 'dyndbg/compile') {
                log.appendLine(describeCompile(e.body));
            }
        }),
    );
}

function deactivate() {}

module.exports = { activate, deactivate, AdapterFactory, ConfigurationProvider, describeCompile };
