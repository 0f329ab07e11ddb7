package worker

import "time"

// Sleep pauses a goroutine of the Worker's own work (chunk pauses, limiter
// retries). Natively it is time.Sleep; in the Worker it is cf.Sleep, so a
// paused run resumes in its own request's context (see cf.Sleep).
var Sleep = time.Sleep
