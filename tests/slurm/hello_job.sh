#!/bin/bash
# The sbatch job script of docs/LAUNCHING.md ("Slurm: sbatch"), run as is
# by the test slurm.sbatch_hello_world from the folder holding hello_world.
# Submit with: sbatch hello_job.sh
#SBATCH --job-name=lci-hello
#SBATCH --ntasks=4
#SBATCH --time=00:05:00
srun --mpi=pmi2 ./hello_world
srun --mpi=pmix ./hello_world
