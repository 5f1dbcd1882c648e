"""What a study is, declared torch-free: config, protocol, metric options, datasets, results schema, NLC window."""
