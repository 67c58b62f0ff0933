// SPDX-License-Identifier: MIT
// What the node drivers of the browser tests share (tests/browser-flame.js,
// tests/speedscope-browser.js): Debian's chromium launched headless by
// playwright-core on a private profile, and the "ok DESC" / "not ok DESC"
// lines their shell scripts turn into TAP (tap-lib.sh's node_checks).
'use strict';
const path = require('path');

// report(OK, DESC, DETAIL): one line; DETAIL said only on a failure.
function report(ok, desc, detail) {
	console.log((ok ? 'ok ' : 'not ok ') + desc + (ok || !detail ? '' : ' (' + detail + ')'));
	return ok;
}

// launch(PLAYWRIGHT_DIR, PROFILE_DIR, {offline, webgl}): a persistent
// context on PROFILE_DIR (tap-lib.sh's browser_gone finds what is left by
// it).  offline: no network at all; webgl: software WebGL (SwiftShader),
// which chromium no longer falls back to by itself.
function launch(pwDir, profileDir, opts) {
	const { chromium } = require(path.join(pwDir, 'node_modules', 'playwright-core'));
	const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync',
		'--disable-dev-shm-usage']; // containers have a small /dev/shm
	if (opts.webgl)
		args.push('--enable-unsafe-swiftshader');
	return chromium.launchPersistentContext(profileDir, {
		executablePath: '/usr/bin/chromium',
		headless: true,
		args,
		viewport: { width: 1200, height: 800 },
		offline: !!opts.offline,
	});
}

module.exports = { report, launch };
