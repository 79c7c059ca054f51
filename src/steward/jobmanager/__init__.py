"""The JobManager: leader election, the Dispatcher, JobMasters, the ResourceManager, REST."""
