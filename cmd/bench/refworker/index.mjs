// Reference worker for `make bench` (not part of the product): the same
// /health answer as the Go Worker, written in plain JS, so the Go path's
// figures can be read against what wrangler dev itself can serve here.
const started = new Date().toISOString();
let served = 0;
export default {
  async fetch(request) {
    served++;
    const url = new URL(request.url);
    if (url.pathname === "/health") {
      return Response.json({ ok: true, service: "reference", instance_started_at: started, requests_served: served });
    }
    return Response.json({ error: "not found" }, { status: 404 });
  },
};
