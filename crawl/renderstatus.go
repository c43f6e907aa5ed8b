package crawl

// Renders: the crawl renders pages (seed --render always or auto, or a
// --render-match).
func (s Settings) Renders() bool { return s.Render != RenderNever || len(s.RenderMatch) > 0 }

// RenderWorkerSuffix ends a render worker's id (work --render runs one
// beside the plain worker, under the same name and this), which status
// counts.
const RenderWorkerSuffix = "+render"
