// SPDX-License-Identifier: MIT
// The flamegraph in a real browser: Debian's chromium, headless, driven by
// playwright-core over the DevTools protocol.  Prints one "ok DESC" or
// "not ok DESC" line per check (tests/browser.sh numbers them as TAP).
//
//   node browser-flame.js PLAYWRIGHT_DIR FLAME.svg PROFILE_DIR [SHOT.png]
//   node browser-flame.js PLAYWRIGHT_DIR FLAME.svg PROFILE_DIR --shot OUT.png
//
// The SVG is tdata-demo's (testdata/demo.cc): demo::compute has the
// siblings demo::load_input and demo::write_output.  --shot only writes
// the screenshot (docs/flamegraph.png).
'use strict';
const path = require('path');
const fs = require('fs');
const zlib = require('zlib');
const { report, launch } = require('./browser-lib.js');

const [pwDir, svgPath, profileDir, arg4, arg5] = process.argv.slice(2);
const shotOnly = arg4 === '--shot';
const shotPath = shotOnly ? arg5 : arg4;

// Decode an 8-bit RGB/RGBA PNG with node's zlib: width, height, and the
// pixels as 0xRRGGBB numbers.
function decodePng(buf) {
	if (buf.readUInt32BE(0) !== 0x89504e47)
		throw new Error('not a PNG');
	let pos = 8, width = 0, height = 0, depth = 0, type = 0;
	const idat = [];
	while (pos < buf.length) {
		const len = buf.readUInt32BE(pos), kind = buf.toString('latin1', pos + 4, pos + 8);
		const data = buf.subarray(pos + 8, pos + 8 + len);
		if (kind === 'IHDR') {
			width = data.readUInt32BE(0);
			height = data.readUInt32BE(4);
			depth = data[8];
			type = data[9];
		} else if (kind === 'IDAT') {
			idat.push(data);
		}
		pos += 12 + len;
	}
	if (depth !== 8 || (type !== 2 && type !== 6) || data_interlaced(buf))
		throw new Error('unexpected PNG format (depth ' + depth + ', colour type ' + type + ')');
	const bpp = type === 6 ? 4 : 3, stride = width * bpp;
	const raw = zlib.inflateSync(Buffer.concat(idat));
	const out = Buffer.alloc(stride * height);
	for (let y = 0; y < height; y++) {
		const f = raw[y * (stride + 1)], src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
		const row = out.subarray(y * stride, (y + 1) * stride), prev = y ? out.subarray((y - 1) * stride, y * stride) : null;
		for (let i = 0; i < stride; i++) {
			const a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0, c = prev && i >= bpp ? prev[i - bpp] : 0;
			let p;
			switch (f) {
			case 0: p = 0; break;
			case 1: p = a; break;
			case 2: p = b; break;
			case 3: p = (a + b) >> 1; break;
			case 4: {
				const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
				p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
				break;
			}
			default: throw new Error('bad PNG filter ' + f);
			}
			row[i] = (src[i] + p) & 255;
		}
	}
	const pixels = new Uint32Array(width * height);
	for (let i = 0; i < width * height; i++)
		pixels[i] = out[i * bpp] << 16 | out[i * bpp + 1] << 8 | out[i * bpp + 2];
	return { width, height, pixels };
}

function data_interlaced(buf) {
	return buf[8 + 8 + 12] !== 0; // IHDR's interlace byte
}

async function main() {
	const context = await launch(pwDir, profileDir, { offline: true });
	let failed = 0;
	const check = (ok, desc, detail) => { if (!report(ok, desc, detail)) failed++; };
	try {
		const page = context.pages()[0] || await context.newPage();
		const errors = [];
		page.on('pageerror', (e) => errors.push(String(e)));
		const requests = [];
		page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
		await page.goto('file://' + path.resolve(svgPath));
		const size = await page.evaluate(() => [document.documentElement.getAttribute('width'),
			document.documentElement.getAttribute('height')].map(Number));
		await page.setViewportSize({ width: size[0], height: size[1] });
		const png = await page.screenshot();
		if (shotPath)
			fs.writeFileSync(shotPath, png);
		if (shotOnly)
			return 0;

		// The picture: not blank, many colours (frames coloured by module).
		const img = decodePng(png);
		const bg = img.pixels[0];
		const colours = new Set();
		let painted = 0;
		for (const p of img.pixels) {
			colours.add(p);
			if (p !== bg)
				painted++;
		}
		check(img.width === size[0] && img.height === size[1],
			'screenshot is the size of the SVG', img.width + 'x' + img.height);
		check(painted * 10 > img.pixels.length,
			'screenshot not blank: ' + (100 * painted / img.pixels.length).toFixed(1) + '% of the pixels painted');
		check(colours.size >= 20, 'screenshot has ' + colours.size + ' distinct colours (>= 20)');
		check(errors.length === 0, 'the script runs without errors', errors.join('; '));
		check(requests.length === 0, 'no network request', requests.join(' '));

		// Frames by name, as the DOM has them now.
		const frame = (name) => page.evaluate((nm) => {
			for (const g of document.querySelectorAll('g.f')) {
				const t = g.querySelector('title').textContent;
				if (t.startsWith(nm + ' (') || t.startsWith(nm + ' \u2014')) {
					const r = g.querySelector('rect');
					return { x: +r.getAttribute('x'), w: +r.getAttribute('width'), fill: r.getAttribute('fill'),
						hidden: getComputedStyle(g).display === 'none', dim: g.classList.contains('dim'),
						title: t, n: +r.getAttribute('data-n') };
				}
			}
			return null;
		}, name);
		const W = size[0] - 20;
		const before = { compute: await frame('demo::compute'), load: await frame('demo::load_input'),
			run: await frame('demo::run_report'), sort: await frame('demo::sort_records'),
			merge: await frame('demo::merge_runs') };
		check(before.compute && before.load && before.run && before.sort,
			'the demo\'s frames are there (run_report, compute, load_input, sort_records)');
		if (!(before.compute && before.load && before.run && before.sort))
			return 1;

		// Hover: the details line names the frame, its module, samples and percent.
		const computeRect = page.locator('g.f', { has: page.locator('title', { hasText: /^demo::compute \(/ }) }).locator('rect');
		await computeRect.hover();
		const details = await page.textContent('#details');
		check(/^demo::compute \(tdata-demo\) \u2014 \d+ samples, \d+\.\d\d%$/.test(details),
			'hover shows "name (module) \u2014 N samples, P%"', details);

		// Click: compute spans the width, its ancestors stay dimmed, its
		// sibling hides, its children grow.
		await computeRect.click();
		const z = { compute: await frame('demo::compute'), load: await frame('demo::load_input'),
			run: await frame('demo::run_report'), sort: await frame('demo::sort_records'),
			write: await frame('demo::write_output') };
		check(Math.abs(z.compute.x - 10) < 0.01 && Math.abs(z.compute.w - W) < 0.01,
			'click zooms: the frame spans the full width', 'x ' + z.compute.x + ' width ' + z.compute.w);
		check(z.load.hidden && z.write.hidden, 'zoom hides the siblings (load_input, write_output)');
		check(!z.run.hidden && z.run.dim && Math.abs(z.run.w - W) < 0.01, 'zoom keeps the ancestors, dimmed, full width');
		check(!z.sort.hidden && z.sort.w > before.sort.w * 1.5,
			'zoom widens the children (sort_records ' + before.sort.w.toFixed(1) + ' -> ' + z.sort.w.toFixed(1) + ' px)');
		check(await page.isVisible('#unzoom'), 'Reset Zoom appears');
		await page.click('#unzoom');
		const r = { compute: await frame('demo::compute'), load: await frame('demo::load_input'),
			run: await frame('demo::run_report') };
		check(Math.abs(r.compute.w - before.compute.w) < 0.01 && !r.load.hidden && !r.run.dim,
			'Reset Zoom restores the picture');

		// Search: a regex, matched frames in the search colour, "Matched: P%".
		page.once('dialog', (d) => d.accept('merge_runs|tokenize'));
		await page.click('#search');
		const s = { merge: await frame('demo::merge_runs'), tok: await frame('demo::tokenize'),
			compute: await frame('demo::compute') };
		const total = await page.evaluate(() => TOTAL); // eslint-disable-line no-undef
		const want = (100 * (s.merge.n + s.tok.n) / total).toFixed(2);
		check(s.merge.fill === 'rgb(230,0,230)' && s.tok.fill === 'rgb(230,0,230)' && s.compute.fill !== 'rgb(230,0,230)',
			'search highlights the matched frames only');
		const matched = await page.textContent('#matched');
		check(matched === 'Matched: ' + want + '%', 'search shows the share matched (' + matched + ')', 'want ' + want);
		await page.click('#search');
		const c = await frame('demo::merge_runs');
		check(c.fill === before.merge.fill, 'Reset Search restores the colours');
		check((await page.textContent('#matched')).trim() === '', 'Reset Search clears "Matched"');

		// Ctrl-F searches too (substring), Esc resets.
		page.once('dialog', (d) => d.accept('Matrix<double>'));
		await page.keyboard.press('Control+f');
		const m = await page.evaluate(() => document.querySelectorAll('g.f.match').length);
		check(m >= 1, 'Ctrl-F opens the search (' + m + ' frames match "Matrix<double>")');
		await page.keyboard.press('Escape');
		check(await page.evaluate(() => document.querySelectorAll('g.f.match').length) === 0, 'Esc clears the search');
		return failed ? 1 : 0;
	} finally {
		await context.close();
	}
}

main().then((rc) => process.exit(rc), (e) => {
	report(false, 'browser test ran', String(e && e.stack || e).split('\n').slice(0, 3).join(' | '));
	process.exit(1);
});
