// speedscope-check.js FILE SCHEMA SAMPLES THREADS PROGRAM CHAIN...
// Check a file of `stackunwind export --format speedscope` against the
// published schema (SCHEMA: the file-format-schema.json of the npm package
// speedscope, validated with ajv) and for what a schema cannot say: frame
// indices in range, samples and weights of equal length, SAMPLES samples in
// all, THREADS profiles, PROGRAM's known CHAIN (leaf first) in the samples.
// One line per check, "PASS: what" or "FAIL: what" (tests/export.sh makes
// them TAP).  Ajv is found through NODE_PATH.
'use strict';
const fs = require('fs');

const [file, schemaPath, wantSamples, wantThreads, prog, ...chain] = process.argv.slice(2);
let failed = false;
function result(ok, what) {
  console.log((ok ? 'PASS: ' : 'FAIL: ') + what);
  if (!ok) failed = true;
}

let doc;
try {
  doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  result(true, 'speedscope: the file is JSON');
} catch (e) {
  result(false, 'speedscope: the file is JSON (' + e.message + ')');
  process.exit(1);
}

// The published schema, as speedscope ships it.
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const Ajv = require('ajv');
const ajv = new Ajv({allErrors: true, strict: false});
const validate = ajv.compile(schema);
const valid = validate(doc);
result(valid, 'speedscope: valid against ' + schemaPath +
       (valid ? '' : ' ' + ajv.errorsText(validate.errors).slice(0, 500)));

// The schema allows any extra property: ours must all be the schema's.
const defs = schema.definitions;
const known = (def) => Object.keys(defs[def].properties);
const extra = [];
const only = (obj, names, where) => {
  for (const k of Object.keys(obj)) if (!names.includes(k)) extra.push(where + '.' + k);
};
only(doc, known('FileFormat.File'), 'file');
only(doc.shared, Object.keys(defs['FileFormat.File'].properties.shared.properties), 'shared');
doc.shared.frames.forEach((f, i) => only(f, known('FileFormat.Frame'), 'frames[' + i + ']'));
doc.profiles.forEach((p, i) => only(p, known('FileFormat.SampledProfile'), 'profiles[' + i + ']'));
result(extra.length === 0, 'speedscope: only properties the schema names' +
       (extra.length ? ' (not: ' + extra.slice(0, 5).join(', ') + ')' : ''));

result(doc.$schema === 'https://www.speedscope.app/file-format-schema.json' &&
       /^stackunwind \S+$/.test(doc.exporter) && typeof doc.name === 'string' &&
       Number.isInteger(doc.activeProfileIndex) && doc.activeProfileIndex >= 0 &&
       doc.activeProfileIndex < doc.profiles.length,
       'speedscope: $schema, exporter "' + doc.exporter + '", name, activeProfileIndex in range');

const frames = doc.shared.frames;
const keys = new Set(frames.map((f) => JSON.stringify([f.name, f.file, f.line, f.col])));
result(keys.size === frames.length && frames.every((f) => f.name.length > 0),
       'speedscope: ' + frames.length + ' frames, each once, all named');

const names = doc.profiles.map((p) => p.name);
result(doc.profiles.length === Number(wantThreads) && new Set(names).size === names.length &&
       names.every((n) => n.startsWith(prog + ' ') && /^.+ \d+\/\d+$/.test(n)),
       'speedscope: one profile per thread, named "comm pid/tid" (' + doc.profiles.length +
       ' profiles, ' + wantThreads + ' threads: ' + names.slice(0, 4).join(', ') + ')');

let total = 0, inRange = true, sameLength = true, timed = true;
for (const p of doc.profiles) {
  total += p.samples.length;
  sameLength = sameLength && p.samples.length === p.weights.length;
  timed = timed && p.type === 'sampled' && p.unit === 'nanoseconds' && p.startValue <= p.endValue &&
    p.weights.every((w) => Number.isInteger(w) && w > 0);
  for (const s of p.samples)
    for (const i of s)
      if (!Number.isInteger(i) || i < 0 || i >= frames.length) inRange = false;
}
result(inRange, 'speedscope: every frame index is in range');
result(sameLength, 'speedscope: samples and weights have the same length in every profile');
result(timed, 'speedscope: sampled profiles in nanoseconds, startValue <= endValue, weights > 0');
result(total === Number(wantSamples),
       'speedscope: ' + total + ' samples, stackunwind unwound ' + wantSamples);

// Stacks are outermost first: the chain, leaf first, is their reversed end.
let leaf = 0, good = 0;
for (const p of doc.profiles)
  for (const s of p.samples) {
    const n = s.map((i) => frames[i].name).reverse();
    if (n[0] !== chain[0]) continue;
    leaf++;
    if (chain.every((c, k) => n[k] === c)) good++;
  }
result(leaf >= 100 && good * 100 >= leaf * 99,
       'speedscope: ' + prog + "'s chain " + chain.join(' ') + ' in >= 99% of the samples in ' +
       chain[0] + ' (' + good + ' of ' + leaf + ')');

process.exit(failed ? 1 : 0);
