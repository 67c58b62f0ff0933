// SPDX-License-Identifier: MIT
// Our speedscope file opened by speedscope itself: the web app the npm
// package speedscope ships (dist/release), served from a loopback HTTP
// server of this script's own, in Debian's chromium (headless, through
// playwright-core), loading the file as speedscope.app does from a link
// (#profileURL=...), shown in its Sandwich view.  Prints one "ok DESC" or
// "not ok DESC" line per check (tests/real-clients.sh numbers them as TAP).
//
//   node speedscope-browser.js PLAYWRIGHT_DIR SPEEDSCOPE_DIR OURS.json LOAD.json PROFILE_DIR HOT
//
// What speedscope should show is read from OURS.json (its name, its active
// profile's name, each function's self weight); LOAD.json is the file
// served (OURS.json itself, or a damaged copy: then the importer's error
// must be seen and the checks fail).  HOT: the function known to have the
// largest self weight (tdata-single's hot_leaf).
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const { report, launch } = require('./browser-lib.js');

const [pwDir, ssDir, oursPath, loadPath, profileDir, hot] = process.argv.slice(2);
let failed = 0;
const check = (ok, desc, detail) => { if (!report(ok, desc, detail)) failed++; };

// What our file says: names, and the self weight of each function in the
// profile speedscope shows first (activeProfileIndex).
const ours = JSON.parse(fs.readFileSync(oursPath, 'utf8'));
const active = ours.profiles[ours.activeProfileIndex];
const self = new Map();
active.samples.forEach((s, i) => {
	const name = ours.shared.frames[s[s.length - 1]].name;
	self.set(name, (self.get(name) || 0) + active.weights[i]);
});
const hottest = [...self.entries()].sort((a, b) => b[1] - a[1])[0];

// The web app's files and the profile, GET only, nothing outside them.
const release = path.join(ssDir, 'dist', 'release');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
	'.wasm': 'application/wasm', '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2' };
const profileUrlPath = '/profile/' + encodeURIComponent(path.basename(oursPath));
const server = http.createServer((req, res) => {
	const url = new URL(req.url, 'http://127.0.0.1');
	let file = null;
	if (url.pathname === profileUrlPath)
		file = loadPath;
	else if (/^\/[A-Za-z0-9._-]+$/.test(url.pathname))
		file = path.join(release, url.pathname.slice(1));
	fs.readFile(file || '/nonexistent', (err, data) => {
		if (req.method !== 'GET' || err) {
			res.writeHead(404);
			res.end();
			return;
		}
		res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
		res.end(data);
	});
});

// "495.50ms (99%)" -> nanoseconds, and the unit's (speedscope's own
// formats, with 2 decimals).
function parseTime(text) {
	const m = /^([0-9.]+)(ns|µs|us|ms|s|min|h)\b/.exec(text.trim());
	if (!m)
		return { ns: NaN, unit: NaN };
	const unit = { ns: 1, µs: 1e3, us: 1e3, ms: 1e6, s: 1e9, min: 60e9, h: 3600e9 }[m[2]];
	return { ns: Number(m[1]) * unit, unit };
}

async function main() {
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	const base = 'http://127.0.0.1:' + server.address().port;
	const context = await launch(pwDir, profileDir, { offline: false, webgl: true });
	try {
		const page = context.pages()[0] || await context.newPage();
		// The importer says what went wrong in several ways: an exception,
		// console.error, "Failed to load format" (console.log), an alert
		// ("Unrecognized format!"), "Something went wrong" in the page.
		const errors = [];
		page.on('pageerror', (e) => errors.push('exception: ' + String(e)));
		page.on('console', (m) => {
			if (m.type() === 'error' || /^Failed to load format/.test(m.text()))
				errors.push('console: ' + m.text().split('\n')[0]);
		});
		page.on('dialog', (d) => {
			errors.push('alert: ' + d.message());
			d.dismiss().catch(() => {});
		});
		const elsewhere = [];
		page.on('request', (r) => { if (!r.url().startsWith(base + '/')) elsewhere.push(r.url()); });

		await page.goto(base + '/index.html#profileURL=' + encodeURIComponent(base + profileUrlPath) + '&view=sandwich');
		// Loaded (the title names the file) or refused; the bound only
		// catches a hang.
		const wentWrong = () => page.evaluate(() => document.body.innerText.includes('Something went wrong'));
		let loaded = false;
		for (let i = 0; i < 600 && !loaded; i++) {
			loaded = / - speedscope$/.test(await page.title());
			if (!loaded && (errors.length || await wentWrong()))
				break;
			if (!loaded)
				await page.waitForTimeout(100);
		}
		if (await wentWrong())
			errors.push('page: Something went wrong');
		check(errors.length === 0, "speedscope's importer read the file without an error", errors.join('; '));
		check(loaded && await page.title() === ours.name + ' - speedscope',
			'the title names the file: "' + ours.name + ' - speedscope"', 'title "' + await page.title() + '"');
		const toolbar = await page.evaluate(() => document.body.innerText);
		check(loaded && toolbar.includes(active.name), 'the toolbar names the profile "' + active.name + '"');

		// The Sandwich view's table: Total, Self, Symbol Name per row,
		// sorted by self weight (speedscope's default).
		let rows = [];
		if (loaded) {
			await page.waitForFunction(() => [...document.querySelectorAll('tr')].some((tr) =>
				tr.querySelectorAll(':scope > td').length === 3), null, { timeout: 30000 }).catch(() => {});
			rows = await page.evaluate(() => [...document.querySelectorAll('tr')]
				.map((tr) => [...tr.querySelectorAll(':scope > td')].map((td) => td.textContent))
				.filter((r) => r.length === 3));
		}
		const top = rows[0] || ['', '', ''];
		const selfs = rows.map((r) => parseTime(r[1]).ns);
		check(hottest && hottest[0] === hot, 'our file: ' + hot + ' has the largest self weight',
			hottest ? hottest[0] : 'no samples');
		check(rows.length > 1 && top[2] === hot && selfs.every((v, i) => i === 0 || v <= selfs[i - 1]),
			'Sandwich view: ' + hot + ' first of ' + rows.length + ' rows sorted by self weight',
			'first row ' + JSON.stringify(top));
		const want = self.get(hot) || 0, seen = parseTime(top[1]);
		check(top[2] === hot && Math.abs(seen.ns - want) <= 0.005 * seen.unit + 1e-6 * want,
			'Sandwich view: ' + hot + "'s self weight as in our file (" + top[1].replace(/\s+/g, ' ') + ', file ' +
			(want / 1e6).toFixed(3) + 'ms)');
		check(elsewhere.length === 0, 'no request but to the loopback server', elsewhere.join(' '));
		return failed ? 1 : 0;
	} finally {
		await context.close();
		server.close();
	}
}

main().then((rc) => process.exit(rc), (e) => {
	report(false, 'speedscope browser test ran', String(e && e.stack || e).split('\n').slice(0, 3).join(' | '));
	process.exit(1);
});
