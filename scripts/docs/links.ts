/**
 * Relative links of the Markdown documentation: every link and image in README.md and docs/
 * that is not a URL must name a file or folder of the repository, and an anchor must name a
 * heading of its page (as GitHub derives heading ids). Links inside code are not links.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"

/** A link that does not resolve, with where it is. */
export interface BrokenLink {
  readonly file: string
  readonly line: number
  readonly target: string
  readonly problem: string
}

/** README.md and every Markdown file under docs/, relative to `root`. */
export const documentationFiles = (root: string): ReadonlyArray<string> => {
  const walk = (dir: string): ReadonlyArray<string> =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir))
          .sort()
          .flatMap((entry) => {
            const path = join(dir, entry)
            return statSync(join(root, path)).isDirectory() ? walk(path) : path.endsWith(".md") ? [path] : []
          })
      : []
  return ["README.md", ...walk("docs")]
}

/** The text without fenced code blocks and inline code, line breaks kept. */
const withoutCode = (markdown: string) =>
  markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, " "))
    .replace(/(`+)[^`\n]*?\1/g, (code) => " ".repeat(code.length))

/** GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens. */
export const headingId = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-")

/** The heading ids of a Markdown text, with GitHub's `-1`, `-2` suffixes for repeats. */
export const headingIds = (markdown: string): ReadonlySet<string> => {
  const ids = new Set<string>()
  const seen = new Map<string, number>()
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
  for (const match of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = headingId(match[1] ?? "")
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    ids.add(count === 0 ? base : `${base}-${count}`)
  }
  return ids
}

const linkTargets = (markdown: string) => {
  const text = withoutCode(markdown)
  const targets: Array<{ readonly target: string; readonly line: number }> = []
  const lineOf = (index: number) => text.slice(0, index).split("\n").length
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push({ target: match[1] ?? "", line: lineOf(match.index ?? 0) })
  }
  for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) {
    targets.push({ target: match[1] ?? "", line: lineOf(match.index ?? 0) })
  }
  return targets
}

/** Every broken relative link or anchor of the documentation of the repository at `root`. */
export const brokenLinks = (root: string): ReadonlyArray<BrokenLink> => {
  const broken: Array<BrokenLink> = []
  const ids = new Map<string, ReadonlySet<string>>()
  const idsOf = (file: string) => {
    let found = ids.get(file)
    if (found === undefined) {
      found = headingIds(readFileSync(join(root, file), "utf8"))
      ids.set(file, found)
    }
    return found
  }
  for (const file of documentationFiles(root)) {
    for (const { target, line } of linkTargets(readFileSync(join(root, file), "utf8"))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // a URL: http:, https:, mailto:
      const [path = "", anchor] = target.split("#", 2)
      const resolved = path === "" ? file : normalize(join(dirname(file), decodeURI(path)))
      const report = (problem: string) => broken.push({ file, line, target, problem })
      if (relative(root, join(root, resolved)).startsWith("..")) {
        report("points outside the repository")
        continue
      }
      if (!existsSync(join(root, resolved))) {
        report(`${resolved} does not exist`)
        continue
      }
      if (anchor === undefined || anchor === "") continue
      if (!resolved.endsWith(".md")) {
        // GitHub's line anchors of source files (#L12) are not checked.
        if (!/^L\d+(-L\d+)?$/.test(anchor)) report(`an anchor into ${resolved}, which is not Markdown`)
        continue
      }
      if (!idsOf(resolved).has(anchor)) report(`${resolved} has no heading #${anchor}`)
    }
  }
  return broken
}
