// Loads a profile file into speedscope (the npm package's own bundle, its release/index.html)
// as its command line does (`speedscope FILE`: a script calling
// speedscope.loadFileFromBase64, named in the page's #localProfilePath), in jsdom rather than
// a browser, then presses its Export button and prints what speedscope exports: its own
// file format (https://www.speedscope.app/file-format-schema.json), the profile as it read
// it. jsdom has no WebGL, so drawing the flame graph fails after the import; the import and
// the export do not draw. Prints one JSON line: {title, exported, errors}.
// Usage: node speedscope_load.cjs FILE   (NODE_PATH: where speedscope and jsdom are installed)
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { JSDOM, ResourceLoader, VirtualConsole } = require('jsdom')

const file = process.argv[2]
const release = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release')

class Local extends ResourceLoader {
  fetch(url) {
    const u = new URL(url)
    return Promise.resolve(fs.readFileSync(u.protocol === 'file:' ? u.pathname : path.join(release, u.pathname)))
  }
}

async function main() {
  const script = path.join(os.tmpdir(), `speedscope-load-${process.pid}.js`)
  const data = fs.readFileSync(file).toString('base64')
  fs.writeFileSync(script, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(file))}, ${JSON.stringify(data)})`)
  const errors = []
  const exported = []
  const console_ = new VirtualConsole()
  console_.on('jsdomError', e => errors.push(String((e && e.message) || e).slice(0, 300)))
  const html = fs.readFileSync(path.join(release, 'index.html'), 'utf8')
  const dom = new JSDOM(html, {
    url: `http://speedscope.test/index.html#localProfilePath=${script}`,
    runScripts: 'dangerously',
    resources: new Local(),
    pretendToBeVisual: true,
    virtualConsole: console_,
    beforeParse(w) {
      // What a browser has and jsdom lacks, as far as the import and the export need.
      w.TextDecoder = TextDecoder
      w.TextEncoder = TextEncoder
      w.matchMedia = () => ({ matches: false, addEventListener() {}, removeEventListener() {}, addListener() {}, removeListener() {} })
      w.ResizeObserver = class { observe() {} unobserve() {} disconnect() {} }
      w.URL.createObjectURL = blob => { exported.push(blob); return 'blob:speedscope' }
    },
  })
  const wait = ms => new Promise(r => setTimeout(r, ms))
  const doc = dom.window.document
  let button
  for (let i = 0; i < 100 && !button; i++) {
    await wait(100)
    button = [...doc.querySelectorAll('div,span,button,a')].find(
      e => e.textContent.trim().endsWith('Export') && e.children.length <= 1,
    )
  }
  if (button) button.click()
  for (let i = 0; i < 50 && !exported.length; i++) await wait(100)
  const text = exported.length
    ? await new Promise(r => { const f = new dom.window.FileReader(); f.onload = () => r(f.result); f.readAsText(exported[0]) })
    : null
  fs.unlinkSync(script)
  process.stdout.write(JSON.stringify({ title: doc.title, exported: text ? JSON.parse(text) : null, errors }) + '\n')
  process.exit(0)
}

main().catch(e => { process.stdout.write(JSON.stringify({ error: String(e) }) + '\n'); process.exit(1) })
