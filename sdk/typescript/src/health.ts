// grpc.health.v1.Health as a Provider serves it: SERVING for "" (the whole server) and for
// llmworker.v1.ToolService until its stop() begins, NOT_SERVING from then on, so a
// registry's provider monitor and balancing clients see the provider going before it goes.
import { type MessageInitShape, create } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";

import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as Status } from "./gen/grpc/health/v1/health_pb.js";
import { HEALTH_SERVICE } from "./balancing.js";

const SERVICES = ["", HEALTH_SERVICE];

/** The health of one server, and the Health service reporting it. */
export class ServingHealth {
  #serving = true;
  #ended = false;
  #change!: Promise<void>;
  #wake!: () => void;

  constructor() {
    this.#renew();
  }

  /** From now on NOT_SERVING (stop() has begun); every watch hears it. */
  stopServing(): void {
    this.#serving = false;
    this.#changed();
  }

  /** End every watch (OK), so that no open stream holds the server's connections. */
  endWatches(): void {
    this.#ended = true;
    this.#changed();
  }

  /** Adds grpc.health.v1.Health (Check, List, Watch) to router. */
  routes(router: ConnectRouter): void {
    router.service(Health, {
      check: (request) => {
        const status = this.#status(request.service);
        if (status === Status.SERVICE_UNKNOWN) throw new ConnectError(`unknown service ${JSON.stringify(request.service)}`, Code.NotFound);
        return { status };
      },
      list: () => ({ statuses: Object.fromEntries(SERVICES.map((service) => [service, { status: this.#status(service) }])) }),
      watch: (request, context) => this.#watch(request.service, context),
    });
  }

  async *#watch(service: string, context: HandlerContext): AsyncGenerator<MessageInitShape<typeof HealthCheckResponseSchema>> {
    let sent: Status | undefined;
    while (!context.signal.aborted) {
      const status = this.#status(service);
      if (status !== sent) {
        yield create(HealthCheckResponseSchema, { status });
        sent = status;
      }
      if (this.#ended) return;
      const change = this.#change;
      let stop = (): void => {};
      const aborted = new Promise<void>((resolve) => (stop = () => resolve()));
      context.signal.addEventListener("abort", stop, { once: true });
      await Promise.race([change, aborted]);
      context.signal.removeEventListener("abort", stop);
    }
  }

  #status(service: string): Status {
    if (!SERVICES.includes(service)) return Status.SERVICE_UNKNOWN;
    return this.#serving ? Status.SERVING : Status.NOT_SERVING;
  }

  #renew(): void {
    this.#change = new Promise((resolve) => (this.#wake = resolve));
  }

  #changed(): void {
    const wake = this.#wake;
    this.#renew();
    wake();
  }
}
