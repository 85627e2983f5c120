#!/usr/bin/env node
// quarry's preinstall: keeps `npm install -g quarry` working on machines that reach only the npm registry.
//
// onnxruntime-node's postinstall downloads its CUDA execution-provider libraries from api.nuget.org on linux/x64,
// and a failed download aborts the whole install. quarry runs on the CPU by default, and npm runs every package's
// preinstall before any package's postinstall, so here, when the user asked for nothing, we mark the CUDA files as
// "not wanted" the only way that script understands: files of those names (empty) in its binary folder. Its
// postinstall then finds nothing missing and exits. The GPU files stay an opt-in step:
//   ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild -g onnxruntime-node   (see README, "GPU")
// which downloads them over these placeholders. quarry recognises an empty placeholder and stays on the CPU.
// Nothing is done when the user gave onnxruntime-node an install flag, or off linux/x64.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const flags = [
  process.env.ONNXRUNTIME_NODE_INSTALL,
  process.env.npm_config_onnxruntime_node_install,
  process.env.ONNXRUNTIME_NODE_INSTALL_CUDA,
  process.env.npm_config_onnxruntime_node_install_cuda,
];
if (process.platform !== 'linux' || process.arch !== 'x64' || flags.some((f) => f)) process.exit(0);

let pkg;
try {
  pkg = require.resolve('onnxruntime-node/package.json', { paths: [path.join(__dirname, '..')] });
} catch {
  process.exit(0); // not extracted yet or installed elsewhere: its own script decides
}
const bin = path.join(path.dirname(pkg), 'bin', 'napi-v6', 'linux', 'x64');
if (!fs.existsSync(bin)) process.exit(0);
for (const name of [
  'libonnxruntime_providers_cuda.so',
  'libonnxruntime_providers_shared.so',
  'libonnxruntime_providers_tensorrt.so',
]) {
  const file = path.join(bin, name);
  try {
    fs.writeFileSync(file, '', { flag: 'wx' }); // never overwrite real files
  } catch (err) {
    if (err.code !== 'EEXIST') process.exit(0);
  }
}
