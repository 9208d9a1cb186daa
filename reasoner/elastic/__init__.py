"""The epoch: what a client sends and gets back (`epoch`), the switch between Update and Bootstrap
under the deadline (`switch`), rule changes (`restratify`, `program_text`), change sets
(`changes`) and progress reports (`progress`).

Layer: above `executors`, beside `reads`. Used by the facade, the command line and, through the
public face, the service.
"""
