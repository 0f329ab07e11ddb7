import { DurableObject } from "cloudflare:workers";

// SchedulerDO: one alarm for all periodic work (issue: SchedulerDO). Bound and
// migrated now so the storage class exists from the first deploy; it answers
// 501 until its Go logic lands.
export class SchedulerDO extends DurableObject {
  async fetch() {
    return Response.json({ error: "SchedulerDO is not implemented yet" }, { status: 501 });
  }
}
