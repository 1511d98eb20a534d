import { create, createFileRegistry, type DescMessage, type DescService } from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { file_taskq_v1_job } from "../gen/taskq/v1/job_pb.js";
import { WorkerService } from "../gen/taskq/v1/worker_pb.js";

/**
 * Views of the hot path's messages whose repeated message fields are read as `repeated bytes`.
 *
 * An embedded message and a bytes field are the same thing on the wire (a length-delimited value), so
 * a ClaimResponse decoded as ClaimResponseView gives each job's encoded bytes, which decodeJob reads
 * without building a Job message through protobuf-es's reflection; likewise settle requests and
 * answers, and a poll's settlements. Only the SDK's own reading changes: the gateway, and workers in other languages, see the
 * taskq.v1 messages byte for byte. JSON has no such equivalence, so views are used only on transports
 * known to speak binary protobuf (see worker-rpc.ts).
 */
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "taskq/v1/sdk_wire_views.proto",
    package: "taskq.v1.sdkviews",
    dependency: ["taskq/v1/job.proto", "google/protobuf/duration.proto"],
    syntax: "proto3",
    messageType: [
      {
        name: "ClaimRequestView",
        field: [
          { name: "queues", jsonName: "queues", number: 1, label: Label.REPEATED, type: Type.STRING },
          { name: "max_jobs", jsonName: "maxJobs", number: 2, label: Label.OPTIONAL, type: Type.UINT32 },
          message("max_wait", "maxWait", 3, ".google.protobuf.Duration"),
          { name: "worker_id", jsonName: "workerId", number: 4, label: Label.OPTIONAL, type: Type.STRING },
          message("lease_duration", "leaseDuration", 5, ".google.protobuf.Duration"),
          repeatedBytes("settlements", 6),
          {
            name: "concurrency",
            jsonName: "concurrency",
            number: 7,
            label: Label.OPTIONAL,
            type: Type.UINT32,
          },
          { name: "prefetch", jsonName: "prefetch", number: 8, label: Label.OPTIONAL, type: Type.UINT32 },
        ],
      },
      {
        name: "ClaimResponseView",
        field: [
          repeatedBytes("jobs", 1),
          { ...message("throttled", "throttled", 2, ".taskq.v1.ThrottledVerdict"), label: Label.REPEATED },
          repeatedBytes("settle_results", 3),
        ],
      },
      { name: "SettleRequestView", field: [repeatedBytes("settlements", 1)] },
      { name: "SettleResponseView", field: [repeatedBytes("results", 1)] },
    ],
  }),
  (name) =>
    name === "taskq/v1/job.proto"
      ? file_taskq_v1_job
      : name === "google/protobuf/duration.proto"
        ? file_google_protobuf_duration
        : undefined,
);

function message(name: string, jsonName: string, number: number, typeName: string) {
  return { name, jsonName, number, label: Label.OPTIONAL, type: Type.MESSAGE, typeName };
}

function repeatedBytes(name: string, number: number) {
  return { name, jsonName: name, number, label: Label.REPEATED, type: Type.BYTES };
}

function view(name: string): DescMessage {
  const desc = registry.getMessage(`taskq.v1.sdkviews.${name}`);
  if (!desc) throw new Error(`taskq: wire view ${name} is missing`);
  return desc;
}

/** taskq.v1.ClaimRequest with each Settlement as its encoded bytes (the gateway reads polls so). */
export const ClaimRequestView = view("ClaimRequestView");
const ClaimResponseView = view("ClaimResponseView");
/** taskq.v1.SettleRequest with each Settlement as its encoded bytes (the gateway reads settles so). */
export const SettleRequestView = view("SettleRequestView");
const SettleResponseView = view("SettleResponseView");

const claim = { ...WorkerService.method.claim, input: ClaimRequestView, output: ClaimResponseView };
const settle = { ...WorkerService.method.settle, input: SettleRequestView, output: SettleResponseView };

/**
 * WorkerService's Claim and Settle with the views as their messages. The methods keep their parent, so
 * calls go to the same paths (`/taskq.v1.WorkerService/Claim`, `…/Settle`).
 */
export const WorkerServiceViews = {
  ...WorkerService,
  methods: [claim, settle],
  method: { claim, settle },
} as unknown as DescService;
