// The `tandem` command line is assembled from command groups; each cmd_*.cc adds its subcommands.
#pragma once

namespace CLI {
class App;
}

namespace tandem::tools {

void add_demo_commands(CLI::App& app);       // tandem demo                  (cmd_demo.cc)
void add_model_commands(CLI::App& app);      // tandem model partition       (cmd_model.cc)
void add_calibrate_commands(CLI::App& app);  // tandem calibrate             (cmd_calibrate.cc)
void add_status_commands(CLI::App& app);     // tandem status                (cmd_status.cc)
void add_calibrate_rtl_commands(CLI::App& app);  // tandem calibrate-rtl     (cmd_calibrate_rtl.cc)
void add_chaos_commands(CLI::App& app);      // tandem chaos                 (cmd_chaos.cc)
void add_sim_commands(CLI::App& app);        // tandem sim run|sweep|exec    (cmd_sim.cc)
void add_trace_commands(CLI::App& app);      // tandem trace start|stop|status|export|report (cmd_trace.cc)
void add_top_command(CLI::App& app);         // tandem top                   (cmd_top.cc)

// tandem bench <what>                                                        (cmd_bench.cc)
void add_bench_commands(CLI::App& app);
void add_dispatch_bench(CLI::App& bench);    // tandem bench dispatch        (cmd_bench_dispatch.cc)
void add_comm_bench(CLI::App& bench);        // tandem bench comm            (cmd_bench_comm.cc)
void add_device_bench(CLI::App& bench);      // tandem bench device         (cmd_bench_device.cc)
void add_mixed_bench(CLI::App& bench);       // tandem bench mixed           (cmd_bench_mixed.cc)
void add_calls_bench(CLI::App& bench);       // tandem bench calls           (cmd_bench_calls.cc)

// tandem experiment <what>                                                   (cmd_experiment.cc)
void add_experiment_commands(CLI::App& app);
void add_partition_experiment(CLI::App& experiment);  // experiment partition (cmd_experiment_partition.cc)
void add_thesis_experiments(CLI::App& experiment);    // experiment thesis, compare-policies (cmd_experiment_thesis.cc)
void add_access_experiment(CLI::App& experiment);     // experiment access-methods (cmd_experiment_access.cc)
void add_vm_experiment(CLI::App& experiment);         // experiment virtual-memory (cmd_experiment_vm.cc)
void add_auto_experiment(CLI::App& experiment);       // experiment auto (cmd_experiment_auto.cc)
void add_jpeg_experiment(CLI::App& experiment);       // experiment jpeg (cmd_experiment_jpeg.cc)

}  // namespace tandem::tools
