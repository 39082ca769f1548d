// @ts-check
// The page's frame around the views: the breadcrumbs, the live-status line and navigation.
import { byId, h, link } from "./dom.js"

/**
 * The breadcrumbs after the console's own.
 * @param {Array<{ label: string, route?: string }>} items
 */
export function setCrumbs(items) {
  byId("crumbs").replaceChildren(
    h("li", {}, [link("/", "Objects")]),
    ...items.map((item) =>
      h("li", {}, [
        item.route === undefined
          ? h("span", { "aria-current": "page", text: item.label })
          : link(item.route, item.label),
      ]),
    ),
  )
}

/** @param {string} text */
export function setLive(text) {
  byId("live").textContent = text
}

/** @param {string} route */
export function navigate(route) {
  location.hash = route
}
