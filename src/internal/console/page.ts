/**
 * The console's HTML: a shell with the landmarks the script fills in, its stylesheet and
 * script served by the console itself (no inline script or style, nothing from elsewhere).
 * The mount path and the title are the only values in it, escaped.
 */

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

/** @internal */
export const pageHtml = (options: { readonly basePath: string; readonly title: string }) => {
  const base = escapeHtml(options.basePath)
  const title = escapeHtml(options.title)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="console-base" content="${base}">
<title>${title}</title>
<link rel="stylesheet" href="${base}/console.css">
<script src="${base}/console.js" defer></script>
</head>
<body>
<a class="skip" href="#view">Skip to content</a>
<header class="topbar">
  <h1><a href="#/">${title}</a></h1>
  <nav aria-label="Breadcrumbs"><ol id="crumbs"></ol></nav>
  <div class="credential">
    <label for="token">Operator token</label>
    <input id="token" type="password" autocomplete="off" spellcheck="false">
  </div>
  <p id="live" class="live" role="status" aria-live="polite"></p>
</header>
<div id="notice" role="alert" aria-live="assertive"></div>
<main id="view" tabindex="-1"><p>Loading…</p></main>
<dialog id="confirm" aria-labelledby="confirm-title">
  <form id="confirm-form" method="dialog">
    <h2 id="confirm-title"></h2>
    <p id="confirm-text"></p>
    <div id="confirm-fields"></div>
    <div class="buttons">
      <button type="button" id="confirm-cancel">Cancel</button>
      <button type="submit" id="confirm-ok" class="primary">Confirm</button>
    </div>
  </form>
</dialog>
</body>
</html>
`
}
