import { afterAll, beforeAll } from "vitest";
import { type GrpcStubs, grpcStubs } from "./grpc-stubs.js";
import { startTestGateway, type TestGateway, type TestGatewayOptions } from "./test-gateway.js";

/**
 * A test gateway and plain grpc-js stubs on it for the enclosing describe block: started before its
 * tests, closed and stopped after. Read `gw` and `stubs` inside the tests.
 */
export function gatewayWithStubs(opts?: TestGatewayOptions): {
  readonly gw: TestGateway;
  readonly stubs: GrpcStubs;
} {
  let gw: TestGateway | undefined;
  let stubs: GrpcStubs | undefined;
  beforeAll(async () => {
    gw = await startTestGateway(opts);
    stubs = grpcStubs(gw.grpcUrl);
  });
  afterAll(async () => {
    stubs?.close();
    await gw?.stop();
  });
  const started = <T>(x: T | undefined): T => {
    if (x === undefined) throw new Error("the test gateway is not started (read it inside a test)");
    return x;
  };
  return {
    get gw() {
      return started(gw);
    },
    get stubs() {
      return started(stubs);
    },
  };
}
