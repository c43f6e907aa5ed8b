package crawl

// RenderWorkerSuffix ends a render worker's id (work --render runs one
// beside the plain worker, under the same name and this), which status
// counts.
const RenderWorkerSuffix = "+render"
