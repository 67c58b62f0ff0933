// SPDX-License-Identifier: MIT
// tests/node.sh's program: a sort with a comparator written in JS, so the
// time goes to V8's builtins (Array.prototype.sort's TimSort, in the copy
// of node's code V8 maps a second time beside its JIT code) and to the
// comparator, compiled by V8 and named in /tmp/perf-PID.map under
// --perf-basic-prof.  A fixed amount of work: as many samples however
// busy the machine is.  At the end it prints "sorted", then each file
// mapped executable a second time, away from where the loader put it
// ("second mapping PATH OFFSET START-END", hex): what V8 did, read from
// /proc/self/maps; and the file of its largest executable mapping ("code
// file PATH": node, or Debian's libnode.so).
//   node --perf-basic-prof node-hot.js [ROUNDS]
'use strict';
const fs = require('fs');

function digitSum(x) {
	let s = 0;
	while (x > 0) {
		s += x % 10;
		x = Math.floor(x / 10);
	}
	return s;
}

function byDigitSum(x, y) {
	return digitSum(x) - digitSum(y) || x - y;
}

function sortRounds(a, rounds) {
	let t = 0;
	for (let r = 0; r < rounds; r++)
		t += a.slice().sort(byDigitSum)[a.length - 1 - r % 100];
	return t;
}

const a = [];
for (let i = 0; i < 20000; i++)
	a.push((i * 7919) % 100003);
console.log(sortRounds(a, Number(process.argv[2] || 60)) > 0 ? 'sorted' : 'not sorted');

// The loader maps a file's segments next to each other: an executable
// mapping of a file with no mapping of the same file beside it was made
// by the program.
const maps = fs.readFileSync('/proc/self/maps', 'utf8').trim().split('\n').map((l) => {
	const f = l.split(/\s+/);
	return { range: f[0], perms: f[1], offset: f[2], path: f.slice(5).join(' ') };
});
let code = null, codeSize = 0;
maps.forEach((m, i) => {
	if (m.perms[2] !== 'x' || !m.path.startsWith('/'))
		return;
	const [lo, hi] = m.range.split('-').map((x) => parseInt(x, 16));
	if (hi - lo > codeSize) {
		code = m.path;
		codeSize = hi - lo;
	}
	const near = (k) => k >= 0 && k < maps.length && maps[k].path === m.path;
	if (!near(i - 1) && !near(i + 1))
		console.log('second mapping ' + m.path + ' ' + m.offset + ' ' + m.range);
});
if (code)
	console.log('code file ' + code);
